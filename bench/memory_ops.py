"""Latency of i-memory operations through the real worker process, against an echo worker baseline.

Both workers run side by side; each round calls every operation once, interleaved, so machine noise
hits all of them alike. memory_set alternates two values so that every call really writes (one lock,
one read, one atomic replace with fsync). Prints median, p99 and the ratio to the echo baseline.

    python bench/memory_ops.py [--quick] [--rounds N] [--entries N]
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

from i_protocol.host import WorkerProcess

ECHO_WORKER = """
from i_protocol import Worker
worker = Worker("echo", "0", dist_name="echo")

@worker.tool("echo")
def echo(arguments, request):
    return "ok"

@worker.hook("before_turn")
def before_turn(data, request):
    return data

raise SystemExit(worker.main())
"""
WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


def find_exe(name: str) -> str:
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if not found:
        raise SystemExit(f"{name} not found next to {sys.executable} or on PATH; pip install ./packages/worker-memory")
    return found


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 rounds instead of 2000")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--entries", type=int, default=50, help="entries in memory before measuring")
    args = parser.parse_args()
    rounds = args.rounds or (200 if args.quick else 2000)

    root = Path(tempfile.mkdtemp(prefix="i-memory-bench-"))
    paths = {name: str(root / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    context = {"workspace_id": WORKSPACE_ID, "paths": paths}
    (root / "echo_worker.py").write_text(ECHO_WORKER)
    memory = WorkerProcess.spawn([find_exe("i-memory")], env=env, cwd=str(root))
    echo = WorkerProcess.spawn([sys.executable, str(root / "echo_worker.py")], env=env, cwd=str(root))
    try:
        for index in range(args.entries):
            memory.call(
                "tool",
                {"name": "memory_set", "arguments": {"key": f"note.{index:03d}", "value": "x" * 100}},
                context=context,
            )
        messages = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hello " * 50}]
        operations = {
            "echo tool (baseline)": (echo, "tool", lambda i: {"name": "echo", "arguments": {"key": "note.001"}}),
            "memory_get": (memory, "tool", lambda i: {"name": "memory_get", "arguments": {"key": "note.001"}}),
            "memory_set (write)": (
                memory,
                "tool",
                lambda i: {"name": "memory_set", "arguments": {"key": "bench", "value": f"v{i % 2}"}},
            ),
            "memory_list": (memory, "tool", lambda i: {"name": "memory_list", "arguments": {}}),
            "echo before_turn (baseline)": (echo, "before_turn", lambda i: {"messages": messages}),
            "before_turn (memory)": (memory, "before_turn", lambda i: {"messages": messages}),
        }
        samples: dict[str, list[float]] = {name: [] for name in operations}
        for warmup in range(20):
            for worker, event, make in operations.values():
                worker.call(event, make(warmup), context=context)
        for index in range(rounds):
            for name, (worker, event, make) in operations.items():
                data = make(index)
                started = time.perf_counter()
                worker.call(event, data, context=context)
                samples[name].append(time.perf_counter() - started)
    finally:
        memory.close()
        echo.close()
        shutil.rmtree(root, ignore_errors=True)

    print(f"i-memory operations, {rounds} rounds, {args.entries} entries of 100 chars, python {sys.version.split()[0]}")
    base_tool = statistics.median(samples["echo tool (baseline)"])
    base_turn = statistics.median(samples["echo before_turn (baseline)"])
    print(f"{'operation':<30}{'median µs':>12}{'p99 µs':>10}{'vs echo':>9}")
    for name, values in samples.items():
        median = statistics.median(values)
        base = base_turn if "before_turn" in name else base_tool
        print(f"{name:<30}{median * 1e6:>12.0f}{percentile(values, 0.99) * 1e6:>10.0f}{median / base:>9.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
