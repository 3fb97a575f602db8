"""Long sessions at real token density: does a long coding-like task survive a full window?

For each text kind (English, Chinese, id-dense JSON), window (8k / 32k / 128k) and compaction
mode (model / local), one `i` process in line mode runs N turns of the task of
`tests/e2e/long_task.py` (notes, reads of 2-40 KB files, shell output, file writes) against the
scripted model on loopback, which counts tokens by content and refuses what does not fit its
context exactly like a real server. Reported per run: failed turns (goal 0), server refusals
(goal 0 after the first observation), compactions, summary requests, planted ids and paths still
in the session (goal all), and wall time per turn (the scripted model answers at once, so that
is the runtime's own cost: core, workers, hooks, session saves).

    .venv/bin/python bench/long_session.py [--quick] [--turns N]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from long_task import LongTask  # noqa: E402

from i_scripted import ScriptedModel  # noqa: E402

BIN = Path(sys.executable).parent
NOTE_BYTES = {"english": 6_000, "chinese": 4_000, "ids": 4_000}
WINDOWS = (8_192, 32_000, 128_000)
_SUMMARY = re.compile(r"(\d+) compaction\(s\) of (\d+) attempt\(s\)")


def run(kind: str, window: int, mode: str, turns: int) -> dict[str, object]:
    """One session of ``turns`` turns; the figures of the table."""
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        dirs = {name: base / name for name in ("config", "data", "cache", "runtime", "project")}
        for path in dirs.values():
            path.mkdir()
        env = dict(
            os.environ,
            I_CONFIG_DIR=str(dirs["config"]),
            I_DATA_DIR=str(dirs["data"]),
            I_CACHE_DIR=str(dirs["cache"]),
            I_RUNTIME_DIR=str(dirs["runtime"]),
        )
        (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": []}))
        (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
        (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 4, "mode": mode}))
        task = LongTask(kind, note_bytes=NOTE_BYTES[kind] if window > 8_192 else 2_000)
        files = task.write_files(dirs["project"])
        lines = [task.action_note(turn, files) for turn in range(turns)]
        with ScriptedModel([task.respond] * (turns * 4), context_window=window) as model:
            (dirs["config"] / "config.json").write_bytes(
                orjson.dumps(
                    {
                        "protocol": "openai",
                        "base_url": model.base_url,
                        "model": "scripted-1",
                        "max_tokens": 512,
                        "stream": False,
                        "retries": 0,
                        "timeout": 60,
                        "budget": {"context_window": window},
                    }
                )
            )
            started = time.perf_counter()
            result = subprocess.run(
                [str(BIN / "i"), "-C", str(dirs["project"]), "--session-name", "bench", "--yolo"],
                input="\n".join(lines) + "\n",
                env=env,
                capture_output=True,
                text=True,
                timeout=3600,
            )
            elapsed = time.perf_counter() - started
            refusals = model.rejections
            summaries = sum(1 for r in model.requests if not r.body.get("tools"))
            first_answer = next((n for n, r in enumerate(model.requests) if r.body.get("tools")), 0)
        saved = orjson.loads((dirs["project"] / ".i" / "sessions" / "bench.json").read_bytes())["messages"]
        text = "\n".join(str(m.get("content")) for m in saved)
        answered = sum(1 for m in saved if m.get("role") == "assistant" and str(m.get("content")).startswith("Done"))
        failed = result.stderr.count("\ni: ") + result.stderr.startswith("i: ")
        match = _SUMMARY.findall(result.stderr)
        commits, attempts = (int(match[-1][0]), int(match[-1][1])) if match else (0, 0)
        return {
            "kind": kind,
            "window": window,
            "mode": mode,
            "turns": turns,
            "failed": failed,
            "refusals": refusals,
            "late_refusals": max(0, refusals - (1 if first_answer == 0 else 0)),
            "compactions": commits,
            "attempts": attempts,
            "summary_requests": summaries,
            "ids_kept": sum(1 for marker in task.planted if marker in text),
            "ids": len(task.planted),
            "paths_kept": len({p for p in task.paths if p in text}),
            "paths": len(set(task.paths)),
            "answered_in_session": answered,
            "ms_per_turn": 1000 * elapsed / turns,
            "stderr_tail": result.stderr[-400:] if failed else "",
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="40 turns, 32k only")
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    turns = 40 if args.quick else args.turns
    windows = (32_000,) if args.quick else WINDOWS
    rows = []
    print(
        f"{'kind':8} {'window':>7} {'mode':5} {'turns':>5} {'failed':>6} {'refused':>7} {'compact':>9} "
        f"{'summ.req':>8} {'ids kept':>9} {'paths':>7} {'ms/turn':>8}"
    )
    for kind in ("english", "chinese", "ids"):
        for window in windows:
            for mode in ("model", "local"):
                row = run(kind, window, mode, turns)
                rows.append(row)
                print(
                    f"{kind:8} {window:>7} {mode:5} {turns:>5} {row['failed']:>6} {row['refusals']:>7} "
                    f"{row['compactions']:>4}/{row['attempts']:<4} {row['summary_requests']:>8} "
                    f"{row['ids_kept']:>4}/{row['ids']:<4} {row['paths_kept']:>3}/{row['paths']:<3} "
                    f"{row['ms_per_turn']:>8.1f}",
                    flush=True,
                )
                if row["stderr_tail"]:
                    print(f"    last error: {row['stderr_tail']!r}")
    per_turn = [float(row["ms_per_turn"]) for row in rows]
    print(
        f"\nfailed turns: {sum(int(r['failed']) for r in rows)}; refusals: {sum(int(r['refusals']) for r in rows)}; "
        f"ms/turn median {statistics.median(per_turn):.1f} (min {min(per_turn):.1f}, max {max(per_turn):.1f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
