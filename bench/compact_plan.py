"""Benchmark i-worker-compact: compact_plan + before_compact on long histories with large tool results.

Measures, in process (the handlers behind the NDJSON loop) and through the real ``i-compact``
process (JSON both ways included), for the model route (prompt + prepared transcript) and the
local route (extractive summary). Prints median and p99 per size, the per-message cost (to show
linearity) and the ratio to the issue's target (plan + local summary of 10,000 messages < 200 ms).

    python bench/compact_plan.py            # 2,500 / 5,000 / 10,000 messages
    python bench/compact_plan.py --quick    # fewer repetitions
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

TARGET_MS = 200.0


def make_history(n: int, payload: str = "large") -> list[dict[str, Any]]:
    """A synthetic agent session: user turns, tool batches with text/JSON results.

    ``large``: 8-12 KB per tool result (≈3 KB per message on average); ``small``: ≤600 bytes.
    """
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are i."}]
    i = 0
    while len(history) < n:
        if i % 25 == 0:
            history.append({"role": "user", "content": f"Request {i}: fix module {i}. Do not push without asking."})
        call = f"call_{i}"
        kind = i % 4
        name = ("shell", "read", "workspace_edit", "write")[kind]
        args = (
            {"cmd": f"pytest tests/test_{i}.py"}
            if kind == 0
            else {"path": f"src/mod_{i}.py", "content": "x = 1\n" * 40}
        )
        history.append(
            {
                "role": "assistant",
                "content": f"Step {i}: running {name}.",
                "tool_calls": [
                    {"id": call, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
                ],
                "_responses_output": [{"id": f"rs_{i}", "encrypted": "e" * 200}],
            }
        )
        if kind == 0:
            body = (
                "\n".join(f"tests/test_{i}.py::case_{j} PASSED" for j in range(120)) + f"\nError: job_{i:05d}x failed"
            )
        elif kind == 2:
            body = json.dumps(
                {
                    "ok": True,
                    "data": {
                        "status": "pending_approval",
                        "mode": "ask",
                        "approval": {
                            "id": f"approval_{i:05d}",
                            "kind": "transaction",
                            "resume": {
                                "tool": "workspace_edit",
                                "arguments": {"action": "commit", "transaction_id": f"tx_{i:05d}"},
                            },
                        },
                        "markdown": "plan text " * 600,
                    },
                    "retention": {"omit_when_summarizing": ["data.markdown"]},
                }
            )
        else:
            body = json.dumps(
                {
                    "path": f"src/mod_{i}.py",
                    "content": "def f():\n    return 1\n" * 200,
                    "truncated": i % 8 == 1,
                    "linesOmitted": 40,
                }
            )
        limit = 8000 + (i % 3) * 2000 if payload == "large" else 600
        if payload == "small" and kind == 2:
            body = body.replace("plan text " * 600, "plan text " * 5)
        history.append({"role": "tool", "tool_call_id": call, "content": body[-limit:] if kind == 0 else body[:limit]})
        i += 1
    history = history[:n]
    while history[-1]["role"] == "tool" or history[-1].get("tool_calls"):
        history.pop()
    history.append({"role": "assistant", "content": "Done for now."})
    return history


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def in_process(history: list[dict[str, Any]], mode: str, reps: int, dirs: dict[str, str]) -> list[float]:
    from i_compact.worker import worker

    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
    budget_result = {"fits": False, "estimate": 10**6, "comparable_estimate": 10**6, "recommend_compact": True}
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        planned = worker.handle(
            {
                "id": 1,
                "event": "compact_plan",
                "paths": dirs,
                "data": {"history": history, "cut": None, "budget_result": budget_result},
            }
        )["data"]
        cut = planned["cut"]
        prepared = worker.handle(
            {
                "id": 2,
                "event": "before_compact",
                "paths": dirs,
                "workspace": "/w",
                "data": {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
            }
        )
        times.append((time.perf_counter() - start) * 1000)
        assert "data" in prepared, prepared.get("error")
    return times


def through_process(history: list[dict[str, Any]], mode: str, reps: int, dirs: dict[str, str]) -> list[float]:
    from i_protocol.host import WorkerProcess

    exe = Path(sys.executable).parent / "i-compact"
    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
    env = {
        "PATH": os.environ.get("PATH", ""),
        "I_CONFIG_DIR": dirs["config_dir"],
        "I_DATA_DIR": dirs["data_dir"],
        "I_CACHE_DIR": dirs["cache_dir"],
        "I_RUNTIME_DIR": dirs["runtime_dir"],
    }
    worker = WorkerProcess.spawn([str(exe)], env=env)
    budget_result = {"fits": False, "estimate": 10**6, "comparable_estimate": 10**6, "recommend_compact": True}
    times = []
    try:
        for _ in range(reps):
            start = time.perf_counter()
            planned = worker.call(
                "compact_plan", {"history": history, "cut": None, "budget_result": budget_result}, timeout=60
            )
            cut = planned["cut"]
            worker.call(
                "before_compact",
                {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
                timeout=60,
            )
            times.append((time.perf_counter() - start) * 1000)
    finally:
        worker.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions and sizes")
    parser.add_argument(
        "--payload",
        choices=("large", "small", "both"),
        default="both",
        help="tool result size: large (8-12 KB) or small (<=600 B)",
    )
    args = parser.parse_args()
    sizes = [2500, 5000, 10000] if not args.quick else [5000, 10000]
    reps = 5 if args.quick else 15
    with tempfile.TemporaryDirectory() as tmp:
        dirs = {k: os.path.join(tmp, k) for k in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        for path in dirs.values():
            os.makedirs(path)
        print(
            f"{'payload':>7} {'messages':>8} {'MB':>6} {'route':>6} {'where':>8} {'median ms':>10} {'p99 ms':>8} "
            f"{'us/msg':>7} {'vs 200ms':>9}"
        )
        payloads = ("small", "large") if args.payload == "both" else (args.payload,)
        for payload, n in ((p, n) for p in payloads for n in sizes):
            history = make_history(n, payload)
            megabytes = len(orjson.dumps(history)) / 1e6
            for mode in ("local", "model"):
                for where, runner in (("inproc", in_process), ("process", through_process)):
                    if where == "process" and args.quick and n != 10000:
                        continue
                    times = runner(history, mode, reps, dirs)
                    median = statistics.median(times)
                    print(
                        f"{payload:>7} {n:>8} {megabytes:>6.1f} {mode:>6} {where:>8} {median:>10.1f} {percentile(times, 0.99):>8.1f} "
                        f"{median * 1000 / n:>7.1f} {median / TARGET_MS:>8.2f}x"
                    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
