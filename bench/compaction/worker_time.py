"""Worker time per compaction (issue 30): this tree's ``i-compact`` beside another's, one run.

Histories: the real coding runs of ``shared/corpora/coding-runs/dev`` cut at 40, 60 and 80% of
their messages, those of 100 to 300 KB (JSON). One compaction = ``compact_plan`` +
``before_compact`` + ``after_compact`` in local mode through the real worker process, timed from
the bench (so the pipe round trips count). The two trees run interleaved, history by history, in
``--rounds`` rounds; the first call of each fresh process is reported apart, timed from the spawn
(start, imports, regex compilation) with no other worker starting beside it; every history is
then timed again in the warm process. Median and p10-p90 of those. Beside the time seen from the
bench (wall clock), the worker's own CPU time (``/proc/<pid>/schedstat``, Linux): on a machine
that others load, wall time measures the load as much as the worker. The load average is printed
before and after the run.

    git archive <old> packages/worker-compact | tar -x -C /tmp/old
    python bench/compaction/worker_time.py --old /tmp/old/packages/worker-compact/src \\
        --new packages/worker-compact/src
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from coding_runs import LEVELS, end_of, plan, runs, size
from tau_bench import Worker

LOW, HIGH = 100_000, 300_000


def histories(every: bool) -> list[tuple[str, list[dict[str, Any]]]]:
    chosen = []
    for name, history in runs("dev"):
        for level in LEVELS:
            cut = history[: end_of(history, level)]
            if every or LOW <= size(cut) <= HIGH:
                chosen.append((f"{name}@{level}", cut))
    return chosen


def cpu_ms(worker: Worker) -> float:
    """The worker process's CPU time so far, in ms (nan where /proc has no schedstat)."""
    try:
        with open(f"/proc/{worker.process.process.pid}/schedstat") as stat:
            return int(stat.read().split()[0]) / 1e6
    except (OSError, ValueError, IndexError):
        return float("nan")


def compaction(worker: Worker, history: list[dict[str, Any]]) -> float:
    start = time.perf_counter()
    planned = plan(worker, history)
    cut = planned["cut"]
    data = {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "bench", "budget": {}}
    prepared = worker.call("before_compact", data)
    worker.call("after_compact", {"summary": prepared["summary"], "state": prepared["state"], "round": 1})
    return (time.perf_counter() - start) * 1000


def spread(values: list[float]) -> str:
    ordered = sorted(values)
    p10 = ordered[int(0.1 * (len(ordered) - 1))]
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return f"{statistics.median(ordered):.0f} ms (p10-p90 {p10:.0f}-{p90:.0f}, n={len(ordered)})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the baseline worker's source folder")
    parser.add_argument("--new", required=True, help="this tree's worker source folder")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--all", action="store_true", help="every cut of every run (40 KB to 650 KB)")
    args = parser.parse_args()
    chosen = histories(args.all)
    times: dict[str, list[float]] = {"old": [], "new": []}
    cpu: dict[str, list[float]] = {"old": [], "new": []}
    first: dict[str, list[float]] = {"old": [], "new": []}
    first_cpu: dict[str, list[float]] = {"old": [], "new": []}
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        for round_number in range(args.rounds):
            # The first call of a fresh process counts from the spawn, one worker at a time (a
            # process started beside another's first call would start for free).
            order = [("old", args.old), ("new", args.new)]
            workers = {}
            for label, source in order if round_number % 2 else reversed(order):
                start = time.perf_counter()
                workers[label] = Worker(str(Path(tmp, f"{label}{round_number}")), "local", source)
                compaction(workers[label], chosen[0][1])
                first[label].append((time.perf_counter() - start) * 1000)
                first_cpu[label].append(cpu_ms(workers[label]))
            try:
                for position, (_, history) in enumerate(chosen):
                    for label, worker in workers.items() if position % 2 else reversed(workers.items()):
                        before = cpu_ms(worker)
                        times[label].append(compaction(worker, history))
                        cpu[label].append(cpu_ms(worker) - before)
            finally:
                for worker in workers.values():
                    worker.close()
    sizes = sorted(size(h) // 1000 for _, h in chosen)
    print(f"{len(chosen)} histories of {sizes[0]}-{sizes[-1]} KB, {args.rounds} rounds, interleaved")
    print(f"load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f} (1 min; {os.cpu_count()} CPUs)")
    print(
        "| worker | per compaction, wall, median (p10-p90) | worker CPU, median (p10-p90) "
        "| spawn + first call, wall, median | worker CPU to the end of the first call, median |"
    )
    print("|---|---|---|---|---|")
    for label in ("old", "new"):
        print(
            f"| {label} | {spread(times[label])} | {spread(cpu[label])} | {statistics.median(first[label]):.0f} ms "
            f"| {statistics.median(first_cpu[label]):.0f} ms |"
        )
    print(
        f"\nnew / old, medians: wall {statistics.median(times['new']) / statistics.median(times['old']):.2f}, "
        f"CPU {statistics.median(cpu['new']) / statistics.median(cpu['old']):.2f}, "
        f"first call wall {statistics.median(first['new']) / statistics.median(first['old']):.2f}, "
        f"first call CPU {statistics.median(first_cpu['new']) / statistics.median(first_cpu['old']):.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
