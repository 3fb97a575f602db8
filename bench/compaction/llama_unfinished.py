"""Model mode against a model that cannot finish a summary (issue 30, item 9).

14 turns of 1.5 KB English notes, one ``i`` process per turn, against a real llama.cpp server with
SmolLM2-135M (8k window: its summaries end with ``finish_reason: "length"``), in model mode with
``on_unfinished_summary`` ``local`` (the default) and ``fail``, and in local mode. Prints, per
setup, how many turns succeeded and what each compaction attempt recorded.

    W=$HOME/llmsrv bash ../shared/tools/llama-server/setup-llama-server.sh     # once, ~7 min
    CTX=8192 W=$HOME/llmsrv ../shared/tools/llama-server/run-server.sh start 8089
    python bench/compaction/llama_unfinished.py http://127.0.0.1:8089/v1 [model model-fail local]

Needs the e2e tox env (every package installed); takes about 10 minutes a setup on 2 cores.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from long_task import LongTask  # noqa: E402

BIN = Path(sys.executable).parent
TURNS = 14


def prepare(setup: str, url: str) -> tuple[Path, dict[str, str], Path]:
    tmp = Path(tempfile.mkdtemp(prefix=f"llama-{setup}-"))
    dirs = {key: tmp / key for key in ("config", "data", "cache", "runtime")}
    for folder in dirs.values():
        folder.mkdir()
    project = tmp / "project"
    project.mkdir()
    env = dict(os.environ, **{f"I_{k.upper()}_DIR": str(v) for k, v in dirs.items()}, LLAMA_KEY="x")
    (dirs["config"] / "plugins.json").write_text(json.dumps({"profile": "compact", "disabled": []}))
    (dirs["config"] / "builtin.json").write_text('{"builtin_profile":"configured","tools":[]}')
    compact: dict[str, object] = {"keep_recent": 4, "mode": "local" if setup == "local" else "model"}
    if setup == "model-fail":
        compact["on_unfinished_summary"] = "fail"
    (dirs["config"] / "compact.json").write_text(json.dumps(compact))
    config = {
        "protocol": "openai",
        "base_url": url,
        "model": "smollm2",
        "api_key_env": "LLAMA_KEY",
        "max_tokens": 512,
        "stream": False,
        "retries": 0,
        "timeout": 300,
        "budget": {"context_window": 8192},
    }
    (dirs["config"] / "config.json").write_text(json.dumps(config))
    return project, env, dirs["data"]


def run(setup: str, url: str) -> None:
    project, env, data = prepare(setup, url)
    task = LongTask("english", note_bytes=1_500)
    codes, notices, started = [], 0, time.time()
    for turn in range(TURNS):
        result = subprocess.run(
            [str(BIN / "i"), "-C", str(project), "--session-name", "s", task.note(turn)],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=900,
        )
        codes.append(result.returncode)
        notices += "summary_not_finished" in result.stderr
        if result.returncode:
            print(f"  turn {turn}: {result.stderr.strip().splitlines()[-1][:300]}")
    found = list(data.glob("workspaces/*/compact/attempts.json"))
    records = json.loads(found[0].read_text())["records"] if found else []
    attempts = [(r.get("status"), r.get("reason"), (r.get("previousAttempt") or {}).get("reason")) for r in records]
    ok = codes.count(0)
    print(f"{setup}: {ok} of {TURNS} turns ok; exit codes {codes}; 'plans again' notices {notices}")
    print(f"  attempts (status, reason, previous_attempt): {attempts}; {time.time() - started:.0f} s")


def main() -> int:
    url = sys.argv[1]
    for setup in sys.argv[2:] or ["model", "model-fail", "local"]:
        run(setup, url)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
