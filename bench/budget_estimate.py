"""Benchmark: budget a ~1,000,000-token (~4 MB) history with i-worker-budget.

Measures, side by side in one run, at 0.25x / 0.5x / 1x / 2x of 4 MB:
  * handler time in-process (the ``context_budget`` handler, unanchored and anchored),
  * the baseline floor: one ``orjson.dumps`` of the same history (serialising it once),
  * the end-to-end call through a real ``i-budget`` process (frame encode, pipe, decode, handler,
    response encode, pipe, decode) with ``i_protocol.host.WorkerProcess``.
Prints median and p99 (ms), the ratio to the 20 ms target and the scaling ratio between sizes.

    python bench/budget_estimate.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from budget_transcripts import TOOLS, history_of_bytes

from i_budget.worker import context_budget

TARGET_MS = 20.0
BASE_BYTES = 4_000_000


def timed(func: Any, runs: int) -> list[float]:
    func()  # warm-up
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def summary(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return statistics.median(ordered), p99


def request(history: list[dict[str, Any]], usage: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "model": "bench-model",
        "budget": {"context_window": 2_000_000},
        "max_tokens": 32_000,
        "history": history,
        "tools": TOOLS,
        "pending_tool_calls": 1,
        "compact": True,
        "usage": usage,
        "cut": None,
    }


def find_exe() -> str:
    beside = Path(sys.executable).parent / "i-budget"
    found = str(beside) if beside.exists() else shutil.which("i-budget")
    if not found:
        raise SystemExit("i-budget is not installed in this environment")
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, for a smoke check")
    args = parser.parse_args()
    runs = 7 if args.quick else 40
    e2e_runs = 3 if args.quick else 15
    from i_protocol.host import WorkerProcess

    tmp = tempfile.mkdtemp(prefix="budget-bench-")
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    for key in ("CONFIG", "DATA", "CACHE", "RUNTIME"):
        os.makedirs(os.path.join(tmp, key.lower()), exist_ok=True)
        env[f"I_{key}_DIR"] = os.path.join(tmp, key.lower())
    worker = WorkerProcess.spawn([find_exe()], env=env, cwd=tmp)
    rows = []
    try:
        for factor in (0.25, 0.5, 1.0, 2.0):
            history = history_of_bytes(int(BASE_BYTES * factor))
            size = len(orjson.dumps(history))
            plain = request(history)
            first = context_budget(plain, None)["budget_result"]  # type: ignore[arg-type]
            grown = [*history, {"role": "assistant", "content": "done"}, {"role": "user", "content": "go on"}]
            anchored = request(grown, {**first["anchor"], "input_tokens": size // 4, "output_tokens": 5})
            assert context_budget(anchored, None)["budget_result"]["estimate_method"] == "usage_anchor"  # type: ignore[arg-type]
            handler = summary(timed(lambda d=plain: context_budget(d, None), runs))  # type: ignore[arg-type]
            handler_anchor = summary(timed(lambda d=anchored: context_budget(d, None), runs))  # type: ignore[arg-type]
            floor = summary(timed(lambda h=history: orjson.dumps(h), runs))
            e2e = summary(timed(lambda d=plain: worker.call("context_budget", d, timeout=60), e2e_runs))
            rows.append((factor, size, len(history), first["estimate"], handler, handler_anchor, floor, e2e))
    finally:
        worker.close()
        shutil.rmtree(tmp, ignore_errors=True)

    print(
        f"i-worker-budget context_budget, {'quick' if args.quick else 'full'} run "
        f"(handler runs={runs}, end-to-end runs={e2e_runs}); times in ms: median / p99"
    )
    print(
        f"{'size':>5} {'MB':>6} {'msgs':>6} {'est.tokens':>10} | {'handler':>15} {'anchored':>15} "
        f"{'dumps floor':>15} {'handler/floor':>13} {'handler/20ms':>12} | {'end-to-end':>15}"
    )
    for factor, size, count, estimate, handler, anchored_t, floor, e2e in rows:
        print(
            f"{factor:>4}x {size / 1e6:>6.2f} {count:>6} {estimate:>10} | "
            f"{handler[0]:>7.2f}/{handler[1]:>7.2f} {anchored_t[0]:>7.2f}/{anchored_t[1]:>7.2f} "
            f"{floor[0]:>7.2f}/{floor[1]:>7.2f} {handler[0] / floor[0]:>13.2f} {handler[0] / TARGET_MS:>12.2f} | "
            f"{e2e[0]:>7.2f}/{e2e[1]:>7.2f}"
        )
    base = next(row for row in rows if row[0] == 1.0)
    print("scaling vs 1x (time ratio / size ratio; 1.00 = linear):")
    for factor, size, _count, _est, handler, anchored_t, _floor, e2e in rows:
        s = size / base[1]
        print(
            f"  {factor:>4}x  handler {handler[0] / base[4][0] / s:.2f}  anchored {anchored_t[0] / base[5][0] / s:.2f}"
            f"  end-to-end {e2e[0] / base[7][0] / s:.2f}"
        )
    verdict = "meets" if base[4][0] < TARGET_MS else "MISSES"
    print(f"1x handler median {base[4][0]:.2f} ms {verdict} the {TARGET_MS:.0f} ms target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
