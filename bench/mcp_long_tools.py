"""Long MCP tools through the real i-mcp worker and the host's progress rule (SPEC §3.4).

Three timings, each against the SDK fixture server (``packages/worker-mcp/tests/fixture_server.py``)
through a real ``i-mcp`` process called the way the core calls it (``WorkerProcess.call`` with the
15 s deadline and a progress callback):

- **progress**: a tool that runs 20 s reporting progress every 2 s completes (the host's 15 s
  deadline restarts at each report);
- **stall**: a tool that reports twice, 2 s apart, then stops reporting is stopped by i-mcp
  ``idle_timeout`` (14 s) after its last report, answered as a tool error before the host's 15 s;
- **slow start**: a server that takes 12 s before it answers ``initialize`` is said to be starting
  after i-mcp's 8 s list wait, then offered from the cache by the next worker;
- **Ctrl-C**: a long call (progress every 0.2 s) interrupted after 2 s the way the core does it
  (``i_core.interrupt.stop_interrupted``: ``WorkerProcess.kill``, the worker's process group):
  how long the kill takes, when the server (in a session of its own) is gone, and the next call
  from a fresh worker (the server's start included) and a warm one after it;
- **remote**: the same server over streamable HTTP on loopback (``tests/http_server.py``, trusted
  with ``allow_private``): its first call (connect and ``initialize`` included) and warm calls,
  beside warm stdio calls.

    python bench/mcp_long_tools.py [--quick]     # --quick: 4 s / 1 s / 3 s instead of 20 / 2 / 12
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import orjson

from i_protocol.host import WorkerProcess

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "packages" / "worker-mcp" / "tests" / "fixture_server.py"
HTTP_SERVER = ROOT / "packages" / "worker-mcp" / "tests" / "http_server.py"
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

        config.write_bytes(
            orjson.dumps({"mcpServers": {"fixture": {**entry, "env": {"FIXTURE_LOG": str(root / "log")}}}})
        )
        interrupt(root, env, folder, context)
        remote(root, env, folder, context, config, entry)
    return 0


def _pids(log: Path) -> list[int]:
    return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


def interrupt(root: Path, env: dict[str, str], folder: str, context: dict[str, object]) -> None:
    """Ctrl-C as the core handles it: the worker's process group killed mid-call, then the next call."""
    worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
    call = {"name": "mcp__fixture__steps", "arguments": {"count": 3000, "every": 0.2}}
    caller = threading.Thread(
        target=lambda: _swallow(lambda: worker.call("tool", call, context=context, progress=lambda _: None)),
        daemon=True,
    )
    caller.start()
    deadline = time.monotonic() + 60
    while not _pids(root / "log") and time.monotonic() < deadline:
        time.sleep(0.01)
    (server,) = _pids(root / "log")
    time.sleep(2.0)
    started = time.monotonic()
    worker.kill()
    killed = time.monotonic() - started
    while not _gone(server) and time.monotonic() - started < 30:
        time.sleep(0.005)
    gone = time.monotonic() - started
    caller.join(5)
    fresh = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
    started = time.monotonic()
    answer = fresh.call("tool", {"name": "mcp__fixture__echo", "arguments": {"text": "again"}}, context=context)
    first = time.monotonic() - started
    started = time.monotonic()
    fresh.call("tool", {"name": "mcp__fixture__echo", "arguments": {"text": "again"}}, context=context)
    warm = time.monotonic() - started
    fresh.close()
    print(
        f"ctrl-c: worker killed in {killed * 1000:.0f} ms, server gone {gone * 1000:.0f} ms after the kill; "
        f"next call from a fresh worker {first:.2f} s ({answer['output']!r}, server start included), warm {warm * 1000:.1f} ms"
    )


def remote(
    root: Path, env: dict[str, str], folder: str, context: dict[str, object], config: Path, entry: dict[str, object]
) -> None:
    """First and warm calls over streamable HTTP on loopback, beside warm stdio calls."""
    server = subprocess.Popen([sys.executable, str(HTTP_SERVER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        remote_entry = {"url": f"http://127.0.0.1:{port}/mcp", "allow_private": True}
        config.write_bytes(orjson.dumps({"mcpServers": {"stdio": entry, "remote": remote_entry}}))
        worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
        worker.call("tools_list", {"tools": [], "problems": []}, context=context, timeout=60)
        worker.close()
        worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=folder)
        times: dict[str, list[float]] = {"stdio": [], "remote": []}
        for name in ("stdio", "remote"):
            for _ in range(31):
                started = time.monotonic()
                worker.call("tool", {"name": f"mcp__{name}__echo", "arguments": {"text": "x"}}, context=context)
                times[name].append(time.monotonic() - started)
        worker.close()
        shown = {name: (found[0], statistics.median(found[1:])) for name, found in times.items()}
        print(
            "remote: first call (connect + initialize) "
            f"{shown['remote'][0] * 1000:.0f} ms, warm median {shown['remote'][1] * 1000:.1f} ms; "
            f"stdio: first call (start + initialize) {shown['stdio'][0] * 1000:.0f} ms, "
            f"warm median {shown['stdio'][1] * 1000:.1f} ms"
        )
    finally:
        server.kill()
        server.wait()


def _swallow(work: object) -> None:
    try:
        work()  # type: ignore[operator]
    except Exception:  # the call the kill broke
        pass


if __name__ == "__main__":
    sys.exit(main())
