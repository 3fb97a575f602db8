"""Long MCP tools through the real i-mcp worker and the host's progress rule (SPEC §3.4).

Three timings, each against the SDK fixture server (``packages/worker-mcp/tests/fixture_server.py``)
through a real ``i-mcp`` process called the way the core calls it (``WorkerProcess.call`` with the
15 s deadline and a progress callback):

- **progress**: a tool that runs 20 s reporting progress every 2 s completes (the host's 15 s
  deadline restarts at each report);
- **stall**: a tool that reports twice, 2 s apart, then stops reporting is stopped by i-mcp
  ``idle_timeout`` (14 s) after its last report, answered as a tool error before the host's 15 s;
- **slow start**: a server that takes 12 s before it answers ``initialize`` is said to be starting
  after i-mcp's 8 s list wait, then offered from the cache by the next worker.

    python bench/mcp_long_tools.py [--quick]     # --quick: 4 s / 1 s / 3 s instead of 20 / 2 / 12
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

from i_protocol.host import WorkerProcess

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "packages" / "worker-mcp" / "tests" / "fixture_server.py"
EXE = Path(sys.executable).parent / "i-mcp"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    run_s, every_s, start_s = (4.0, 1.0, 3.0) if args.quick else (20.0, 2.0, 12.0)
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        paths = {name: str(root / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        for path in paths.values():
            os.makedirs(path)
        context = {"workspace": str(root), "paths": paths}
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1", "HOME": str(root)}
        entry = {"command": sys.executable, "args": [str(SERVER)], "timeout": 120}
        config = Path(paths["config_dir"]) / "mcp.json"
        config.write_bytes(orjson.dumps({"mcpServers": {"fixture": entry}}))

        worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
        worker.call("tools_list", {"tools": []}, context=context, timeout=60)
        seen: list[float] = []
        started = time.monotonic()
        count = int(run_s / every_s)
        call = {"name": "mcp__fixture__steps", "arguments": {"count": count, "every": every_s}}
        answer = worker.call("tool", call, context=context, progress=lambda _: seen.append(time.monotonic()))
        took = time.monotonic() - started
        print(f"progress: {answer['output']!r} after {took:.1f} s, {len(seen)} progress frames (deadline 15 s)")

        seen.clear()
        started = time.monotonic()
        call = {"name": "mcp__fixture__steps", "arguments": {"count": 2, "every": every_s, "stall": 600}}
        answer = worker.call("tool", call, context=context, progress=lambda _: seen.append(time.monotonic()))
        after = time.monotonic() - seen[-1]
        print(f"stall: stopped {after:.1f} s after its last progress frame: {answer['output'][:100]!r}")
        worker.close()

        slow = {**entry, "env": {"FIXTURE_START_DELAY": str(start_s)}}
        config.write_bytes(orjson.dumps({"mcpServers": {"fixture": entry, "slow": slow}}))
        worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
        started = time.monotonic()
        first = worker.call("tools_list", {"tools": [], "problems": []}, context=context)
        said = [(p["server"], p["reason"]) for p in first["problems"]]
        print(f"slow start: first answer after {time.monotonic() - started:.1f} s, problems {said}")
        time.sleep(start_s + 3)  # the session goes on meanwhile; the slow server comes up in the background
        worker.close()
        again = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
        started = time.monotonic()
        second = again.call("tools_list", {"tools": [], "problems": []}, context=context)
        slow_tools = [tool["name"] for tool in second["tools"] if tool["name"].startswith("mcp__slow__")]
        print(
            f"slow start: next worker answered in {time.monotonic() - started:.1f} s with {len(slow_tools)} "
            f"tools of 'slow', problems {second['problems']}"
        )
        again.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
