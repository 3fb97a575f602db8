"""i-protocol benchmark: round trip, cold start and large frames, side by side with baselines.

Run from an environment where i-protocol is installed (``scripts/bootstrap`` makes .venv):
    .venv/bin/python bench/protocol_roundtrip.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path

import orjson

from i_protocol import encode_frame
from i_protocol.host import WorkerProcess

HERE = Path(__file__).parent
PY = sys.executable


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fmt(values: list[float], unit: str = "us", scale: float = 1e6) -> str:
    med, p99 = statistics.median(values) * scale, pct(values, 0.99) * scale
    lo, hi = pct(values, 0.25) * scale, pct(values, 0.75) * scale
    return f"median {med:9.1f} {unit}  p99 {p99:9.1f} {unit}  IQR {lo:.1f}-{hi:.1f}"


class RawEcho:
    """The baseline host: raw os.write/os.read over pipes to a bare Python echo."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen([PY, str(HERE / "raw_echo.py")], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.inp, self.out = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.inp, False)
        self.sel = selectors.DefaultSelector()
        self.sel.register(self.out, selectors.EVENT_READ)
        self.wsel = selectors.DefaultSelector()
        self.wsel.register(self.inp, selectors.EVENT_WRITE)

    def round_trip(self, frame: bytes) -> bytes:
        view = memoryview(frame)
        buf = bytearray()
        while view:
            try:
                view = view[os.write(self.inp, view) :]
            except BlockingIOError:
                pass
            if view:
                # Drain what the echo already sent so that neither side blocks on a full pipe.
                for _ in self.sel.select(0):
                    buf += os.read(self.out, 1 << 20)
                self.wsel.select(1)
        while not buf.endswith(b"\n"):
            self.sel.select()
            buf += os.read(self.out, 1 << 20)
        return bytes(buf)

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()


def bench_round_trip(n: int) -> tuple[list[float], list[float]]:
    data = {"messages": [{"role": "user", "content": "x" * 1000}]}
    payload = {"id": 1, "event": "before_turn", "data": data}
    raw_frame = encode_frame(payload)
    assert 1000 < len(raw_frame) < 1100  # ~1 KiB hook call
    worker = WorkerProcess.spawn([PY, str(HERE / "echo_worker.py")], env=dict(os.environ))
    raw = RawEcho()
    protocol_times, raw_times = [], []
    for _ in range(50):  # warm-up both
        worker.call("before_turn", data)
        raw.round_trip(raw_frame)
    for _ in range(n):  # interleaved so both see the same machine noise
        t = time.perf_counter()
        worker.call("before_turn", data)
        protocol_times.append(time.perf_counter() - t)
        t = time.perf_counter()
        raw.round_trip(raw_frame)
        raw_times.append(time.perf_counter() - t)
    worker.close()
    raw.close()
    return protocol_times, raw_times


def bench_cold_start(n: int, argv_list: dict[str, list[str]]) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {name: [] for name in ["python -c pass", "python -c 'import orjson'", *argv_list]}
    for _ in range(n):
        for label, argv in (
            ("python -c pass", [PY, "-c", "pass"]),
            ("python -c 'import orjson'", [PY, "-c", "import orjson"]),
        ):
            t = time.perf_counter()
            subprocess.run(argv, check=True)
            results[label].append(time.perf_counter() - t)
        for label, argv in argv_list.items():
            t = time.perf_counter()
            worker = WorkerProcess.spawn(argv, env=dict(os.environ))
            worker.call("finish", {"messages": []}, timeout=30)  # an event every worker answers
            results[label].append(time.perf_counter() - t)
            worker.close()
    return results


def bench_large(n: int) -> tuple[list[float], list[float]]:
    data = {"blob": "z" * (32 * 1024 * 1024 - 100)}
    frame = encode_frame({"id": 1, "event": "before_turn", "data": data})
    worker = WorkerProcess.spawn([PY, str(HERE / "echo_worker.py")], env=dict(os.environ))
    raw = RawEcho()
    protocol_times, raw_times = [], []
    for _ in range(n):
        t = time.perf_counter()
        reply = worker.call("before_turn", data, timeout=60)
        protocol_times.append(time.perf_counter() - t)
        assert len(reply["blob"]) == len(data["blob"])
        t = time.perf_counter()
        raw.round_trip(frame)
        raw_times.append(time.perf_counter() - t)
    worker.close()
    raw.close()
    return protocol_times, raw_times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer iterations")
    args = parser.parse_args()
    n_rt, n_cold, n_large = (300, 8, 3) if args.quick else (3000, 30, 10)
    print(f"python {sys.version.split()[0]} at {PY}; cores: {os.cpu_count()}")

    protocol_rt, raw_rt = bench_round_trip(n_rt)
    ratio = statistics.median(protocol_rt) / statistics.median(raw_rt)
    print(f"\n1 KiB hook call round trip, {n_rt} calls, interleaved")
    print(f"  i-protocol worker     {fmt(protocol_rt)}")
    print(f"  raw pipe echo         {fmt(raw_rt)}")
    print(f"  ratio (median)        {ratio:.2f}x   (target <= 3x)")

    subjects = {"echo worker (i_protocol)": [PY, str(HERE / "echo_worker.py")]}
    bin_dir = Path(PY).parent
    for script in ("i-budget", "i-compact", "i-cache", "i-memory", "i-web"):
        if (bin_dir / script).exists():
            subjects[f"{script} console script"] = [str(bin_dir / script)]
    cold = bench_cold_start(n_cold, subjects)
    base = statistics.median(cold["python -c pass"])
    print(f"\ncold start: spawn to first response, {n_cold} runs each, interleaved")
    for label, times in cold.items():
        print(f"  {label:32s} {fmt(times, 'ms', 1e3)}   {statistics.median(times) / base:.2f}x bare")
    print("  (target: worker within 2x of the bare interpreter)")

    protocol_big, raw_big = bench_large(n_large)
    print(f"\n32 MiB frame round trip, {n_large} calls")
    print(f"  i-protocol worker     {fmt(protocol_big, 'ms', 1e3)}")
    print(f"  raw pipe echo         {fmt(raw_big, 'ms', 1e3)}")
    print(f"  ratio (median)        {statistics.median(protocol_big) / statistics.median(raw_big):.2f}x")
    print(orjson.dumps({"round_trip_ratio": round(ratio, 2)}).decode())


if __name__ == "__main__":
    main()
