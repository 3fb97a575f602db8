"""Per-tool overhead of i-checkpoint on a large git work tree, through the real worker process.

Builds a synthetic work tree (``.git`` folder, ``--files`` files of about ``--kib`` KiB in folders of
100, a tenth of them "ignored" build output), then times the ``before_tool`` + ``after_tool`` pair
of each kind of call against an echo worker's pair (the cost of a hook that does nothing):

- ``shell (first)``: the session's first snapshot, which reads and stores every file;
- ``shell (warm)``: a later shell call that changes one file (stat walk twice, one file read);
- ``write``: a write of one file (its before state kept, its after state hashed).

Also says what the bound (``max_files``) costs when the tree is over it: the stat walk stops early.
Prints medians (ms); never part of the pass/fail suite.

    python bench/checkpoint_overhead.py [--files 20000] [--kib 4] [--rounds 15]
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

from i_protocol.host import WorkerProcess

ECHO_WORKER = """
from i_protocol import Worker
worker = Worker("echo", "0", dist_name="echo")

@worker.hook("before_tool", "after_tool")
def same(data, request):
    return data

raise SystemExit(worker.main())
"""
WORKSPACE_ID = "3c1b2a0e-7a51-4b7e-8a55-1f6b0b0b6d11"


def find_exe(name: str) -> str:
    here = Path(sys.executable).parent / name
    found = str(here) if here.exists() else shutil.which(name)
    if found is None:
        raise SystemExit(f"{name} is not installed (pip install ./packages/worker-checkpoint)")
    return found


def make_tree(root: Path, files: int, kib: int) -> int:
    """A synthetic work tree; returns the bytes written."""
    (root / ".git").mkdir(parents=True)
    body = os.urandom(kib * 512).hex().encode()  # kib KiB of text
    total = 0
    for index in range(files):
        folder = root / ("build" if index % 10 == 0 else "src") / f"d{index // 100:04d}"
        folder.mkdir(parents=True, exist_ok=True)
        data = b"%d\n" % index + body
        (folder / f"f{index:06d}.txt").write_bytes(data)
        total += len(data)
    return total


class Caller:
    def __init__(self, worker: WorkerProcess, context: dict[str, Any]) -> None:
        self.worker, self.context, self.calls = worker, context, 0
        self.notice: str | None = None

    def pair(self, name: str, arguments: dict[str, Any], effect: Any, turn: int) -> float:
        """Seconds of before_tool + after_tool (the tool's own effect not counted)."""
        self.calls += 1
        data = {"name": name, "arguments": orjson.dumps(arguments).decode(), "id": f"c{self.calls}"}
        data.update(session="bench", turn=turn)
        started = time.perf_counter()
        self.notice = self.worker.call("before_tool", data, context=self.context, timeout=120).get("notice")
        spent = time.perf_counter() - started
        effect()
        started = time.perf_counter()
        after = {"name": name, "id": data["id"], "output": "", "session": "bench", "turn": turn}
        self.worker.call("after_tool", after, context=self.context, timeout=120)
        return spent + time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=20_000)
    parser.add_argument("--kib", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="i-bench-checkpoint-") as temp:
        base = Path(temp)
        project = base / "project"
        started = time.perf_counter()
        size = make_tree(project, args.files, args.kib)
        print(f"work tree: {args.files} files, {size / 1e6:.1f} MB (made in {time.perf_counter() - started:.1f} s)")
        paths = {k: str(base / k) for k in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        context = {"workspace": str(project), "workspace_id": WORKSPACE_ID, "paths": paths}
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
        echo_file = base / "echo.py"
        echo_file.write_text(ECHO_WORKER)
        echo = Caller(WorkerProcess.spawn([sys.executable, str(echo_file)], env=env, cwd=temp), context)
        worker = Caller(WorkerProcess.spawn([find_exe("i-checkpoint")], env=env, cwd=temp), context)
        target = project / "src" / "d0001" / "f000101.txt"
        try:
            first, calls = [worker.pair("shell", {"command": "true"}, lambda: None, 1)], 1
            while worker.notice is not None and calls < 20:  # stopped at max_seconds: the next goes on
                print(f"call {calls}: {worker.notice}")
                first.append(worker.pair("shell", {"command": "true"}, lambda: None, 1))
                calls += 1
            rows: dict[str, list[float]] = {"echo pair": [], "shell (warm)": [], "write": []}
            for turn in range(2, args.rounds + 2):
                rows["echo pair"].append(echo.pair("shell", {}, lambda: None, turn))

                def touch(turn: int = turn) -> None:
                    target.write_bytes(b"round %d\n" % turn)

                rows["shell (warm)"].append(worker.pair("shell", {"command": "x"}, touch, turn))
                rows["write"].append(worker.pair("write", {"path": str(target)}, touch, turn))
            print(f"{'call':<16}{'median ms':>12}")
            for n, seconds in enumerate(first, 1):
                print(f"{f'shell (first {n})':<16}{seconds * 1000:>12.1f}")
            for name, values in rows.items():
                print(f"{name:<16}{statistics.median(values) * 1000:>12.2f}")
            config = base / "config_dir" / "checkpoint.json"
            config.parent.mkdir(parents=True, exist_ok=True)
            config.write_text(f'{{"max_files": {args.files // 2}}}')
            over = [worker.pair("shell", {}, lambda: None, 100 + r) for r in range(5)]
            print(
                f"{'shell (over)':<16}{statistics.median(over) * 1000:>12.2f}  (max_files {args.files // 2}: refused early)"
            )
            store = base / "data_dir" / "workspaces" / WORKSPACE_ID / "checkpoints" / "bench"
            stored = sum(f.stat().st_size for f in store.rglob("*") if f.is_file())
            print(f"store: {stored / 1e6:.1f} MB for a {size / 1e6:.1f} MB tree")
        finally:
            echo.worker.close()
            worker.worker.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
