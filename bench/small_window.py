"""A 12-turn session with tool calls against a real llama.cpp server with a small window (issue [14]).

One ``i`` process per turn, 1.2 KB English notes, local-mode compaction (``--compact-mode model``:
the compactor's summary requests go to the same server), against llama-server with
SmolLM2-135M: the default profile (``standard``) at 8,192 tokens and ``small`` at 4,096. SmolLM2
calls a tool only with ``tool_choice: "required"``: this bench's own ``before_request`` hook sets
it on a turn's first request when the note asks for a tool (``[tool]``), so the next request
(after the tool result) is answered in text. Tools other than read/glob/search are refused (no TTY
to approve them). Prints per setup: turns answered, compaction attempts (committed, declined,
failed), the first request's estimate beside the server's prompt tokens (byte estimate and exact
count), and the exact count's latency beside the median request.

    CTX=8192 W=/tmp/llmsrv ../shared/tools/llama-server/run-server.sh start 8144
    CTX=4096 W=/tmp/llmsrv ../shared/tools/llama-server/run-server.sh start 8145
    .tox/py311-e2e/bin/python bench/small_window.py --url8k http://127.0.0.1:8144/v1 --url4k http://127.0.0.1:8145/v1

Needs the e2e tox env (every package installed). ``--hook LOG`` is the hook worker itself.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
TURNS = 12
TIMEOUT = 600  # seconds per model request; --timeout (a loaded 2-core machine needs more for a summary)


def hook(log: str) -> int:
    """The bench's ``before_request`` / ``after_response`` worker: forces a tool call where asked, logs times."""
    from i_protocol import Worker

    worker = Worker("bench-small-window", "0")

    def record(entry: dict[str, Any]) -> None:
        with open(log, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"t": time.perf_counter_ns() / 1e9, **entry}) + "\n")

    @worker.hook("before_request")
    def before_request(data: dict[str, Any], request: Any) -> dict[str, Any]:
        body = data["body"]
        last = body["messages"][-1]
        if last.get("role") == "user" and "[tool]" in str(last.get("content")) and body.get("tools"):
            body["tool_choice"] = "required"
        record({"event": "before_request", "body": body})
        return data

    @worker.hook("after_response")
    def after_response(data: dict[str, Any], request: Any) -> dict[str, Any]:
        response = data.get("response") or {}
        record({"event": "after_response", "usage": response.get("usage")})
        return data

    return worker.main([])


def notes() -> list[str]:
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(ROOT.glob("packages/*/README.md")))
    words = [word for word in text.replace("`", " ").replace("|", " ").split() if word.isascii()]
    out = []
    for turn in range(TURNS):
        start = turn * 180
        body = " ".join(words[start : start + 180])[:1200]
        ask = (
            "[tool] Read README.md, then say in one sentence what it is about."
            if turn % 2
            else "Reply in one sentence."
        )
        out.append(f"Note {turn}: {body}\n\n{ask}")
    return out


def prepare(
    tag: str, url: str, window: int, profile: str, exact: str, log: Path, mode: str
) -> tuple[Path, dict[str, str], Path]:
    tmp = Path(tempfile.mkdtemp(prefix=f"small-{tag}-"))
    dirs = {key: tmp / key for key in ("config", "data", "cache", "runtime")}
    for folder in dirs.values():
        folder.mkdir()
    project = tmp / "project"
    project.mkdir()
    (project / "README.md").write_text("# demo\n\nA small project whose README is read by the bench.\n")
    env = dict(os.environ, **{f"I_{k.upper()}_DIR": str(v) for k, v in dirs.items()}, LLAMA_KEY="x")
    (dirs["config"] / "plugins.json").write_text(json.dumps({"profile": profile, "disabled": ["web", "memory"]}))
    (dirs["config"] / "compact.json").write_text(json.dumps({"keep_recent": 4, "mode": mode}))
    config = {
        "protocol": "openai",
        "base_url": url,
        "model": "smollm2",
        "api_key_env": "LLAMA_KEY",
        "max_tokens": 96,
        "stream": False,
        "retries": 0,
        "timeout": int(os.environ.get("SMALL_WINDOW_TIMEOUT", TIMEOUT)),
        "budget": {"context_window": window, "exact_count": exact},
    }
    (dirs["config"] / "config.json").write_text(json.dumps(config))
    printed = subprocess.run(
        [str(BIN / "i"), "--runtime", "manifest", profile], env=env, capture_output=True, text=True, check=True
    ).stdout
    manifest = json.loads(printed)
    manifest["hooks"].append(
        {"events": ["before_request", "after_response"], "exec": [sys.executable, __file__, "--hook", str(log)]}
    )
    path = tmp / "manifest.json"
    path.write_text(json.dumps(manifest))
    return project, env, path


def run(tag: str, url: str, window: int, profile: str, exact: str, turns: int, mode: str = "local") -> dict[str, Any]:
    log = Path(tempfile.mkdtemp()) / "requests.ndjson"
    project, env, manifest = prepare(tag, url, window, profile, exact, log, mode)
    codes, lines, started = [], [], time.time()
    estimates: list[int | None] = []
    for turn, note in enumerate(notes()[:turns]):
        result = subprocess.run(
            [str(BIN / "i"), "-C", str(project), "--manifest", str(manifest), "--session-name", "s", note],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=1800,
        )
        codes.append(result.returncode)
        summary = [line for line in result.stderr.splitlines() if line.startswith("[i] ")]
        found = summary[-1].rsplit("budget estimate ", 1) if summary else []
        estimate = found[1].split()[0] if len(found) == 2 else None
        estimates.append(int(estimate) if estimate and estimate.isdigit() else None)
        lines.extend(line for line in result.stderr.splitlines() if "compact" in line or "small" in line)
        if result.returncode:
            print(f"  {tag} turn {turn}: exit {result.returncode}: {result.stderr.strip().splitlines()[-1][:300]}")
    records = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    data = Path(env["I_DATA_DIR"])
    found = list(data.glob("workspaces/*/compact/attempts.json"))
    attempts = json.loads(found[0].read_text())["records"] if found else []
    return {
        "tag": tag,
        "codes": codes,
        "records": records,
        "estimates": estimates,
        "attempts": attempts,
        "lines": lines,
        "seconds": time.time() - started,
    }


def count_latency(url: str, bodies: list[dict[str, Any]]) -> list[float]:
    """Seconds of the server's count (apply-template + tokenize) of each request body."""
    import httpx

    root = url.rstrip("/").removesuffix("/v1")
    times = []
    with httpx.Client(timeout=600) as client:
        for body in bodies:
            start = time.perf_counter()
            keep = {key: body[key] for key in ("messages", "tools") if key in body}
            prompt = client.post(root + "/apply-template", json=keep).json()["prompt"]
            client.post(root + "/tokenize", json={"content": prompt, "add_special": True}).raise_for_status()
            times.append(time.perf_counter() - start)
    return times


def report(outcome: dict[str, Any], url: str) -> None:
    records = outcome["records"]
    durations = [
        after["t"] - before["t"]
        for before, after in itertools.pairwise(records)
        if before["event"] == "before_request" and after["event"] == "after_response"
    ]
    bodies = [r["body"] for r in records if r["event"] == "before_request"]
    forced = sum(1 for body in bodies if body.get("tool_choice") == "required")
    statuses: dict[str, int] = {}
    for attempt in outcome["attempts"]:
        key = f"{attempt.get('status')}:{attempt.get('reason')}"
        statuses[key] = statuses.get(key, 0) + 1
    ok = outcome["codes"].count(0)
    print(f"{outcome['tag']}: {ok} of {len(outcome['codes'])} turns answered; exit codes {outcome['codes']}")
    print(f"  requests {len(bodies)} ({forced} with tool_choice required); {outcome['seconds']:.0f} s")
    print(f"  compaction attempts (status:reason -> count): {statuses or 'none'}")
    for line in outcome["lines"][:8]:
        print(f"  | {line[:200]}")
    if durations:
        latency = count_latency(url, bodies[: min(6, len(bodies))])
        median = statistics.median(durations)
        print(
            f"  request median {median * 1000:.0f} ms; exact count median {statistics.median(latency) * 1000:.1f} ms "
            f"({statistics.median(latency) / median:.2%} of the request)"
        )


def first_request(url: str, window: int, profile: str) -> None:
    """The first request's estimate, byte estimate and exact count side by side with the server's count."""
    row = []
    for exact in ("off", "tokenize"):
        outcome = run(f"first-{exact}", url, window, profile, exact, 1)
        usage = next((r["usage"] for r in outcome["records"] if r["event"] == "after_response"), None) or {}
        row.append((exact, outcome["estimates"][0], usage.get("prompt_tokens")))
    for exact, estimate, served in row:
        ratio = f"{estimate / served:.3f}x" if estimate and served else "?"
        print(
            f"  first request, exact_count {exact:<8}: estimate {estimate} vs server prompt_tokens {served} ({ratio})"
        )


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--hook":
        return hook(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url8k")
    parser.add_argument("--url4k")
    parser.add_argument("--exact", default="tokenize", choices=("off", "tokenize"))
    parser.add_argument("--turns", type=int, default=TURNS)
    parser.add_argument("--compact-mode", default="local", choices=("local", "model"))
    parser.add_argument("--timeout", type=int, default=TIMEOUT, help="config.json timeout per model request, s")
    parser.add_argument("--skip-first", action="store_true", help="skip the first-request estimate rows")
    options = parser.parse_args()
    os.environ["SMALL_WINDOW_TIMEOUT"] = str(options.timeout)  # read by prepare()
    if options.url8k:
        print(f"standard profile, 8,192-token window, {options.compact_mode} compaction")
        if not options.skip_first:
            first_request(options.url8k, 8192, "standard")
        outcome = run(
            "standard-8k", options.url8k, 8192, "standard", options.exact, options.turns, options.compact_mode
        )
        report(outcome, options.url8k)
    if options.url4k:
        print(f"small profile, 4,096-token window, {options.compact_mode} compaction")
        if not options.skip_first:
            first_request(options.url4k, 4096, "small")
        outcome = run("small-4k", options.url4k, 4096, "small", options.exact, options.turns, options.compact_mode)
        report(outcome, options.url4k)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
