"""Run an MCP server so that it dies with its worker: ``python -m i_mcp.launch COMMAND [ARG...]``.

The MCP SDK starts every server in a new session, out of reach of the process-group kill with
which the core's reaper ends a worker and everything it started. On Linux this launcher asks the
kernel (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill it when the thread that started it dies (the
worker's event-loop thread, which lives as long as the worker), however the worker ends, even by
SIGKILL, and arms the same signal in the server it starts, so the server dies with the launcher.

It also bounds what the server sends: the server's stdin and stderr are the launcher's own, but
its stdout is relayed one line (one JSON-RPC message) at a time, and a line over
``MAX_MESSAGE_BYTES`` is not passed on: the SDK's reader would take minutes over it (its line
buffer grows by copying), so the launcher answers the request it belongs to with a JSON-RPC
error saying it was too large (its id is read from the line's first or last bytes).
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
import subprocess
import sys

PR_SET_PDEATHSIG = 1
MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The largest message a server may send (a tool result); i-mcp refuses a larger one as too large."""
TOO_LARGE = -32001
_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')


def _die_with_parent() -> bool:
    """Arm the parent-death signal (Linux); False when the parent is already gone."""
    if not sys.platform.startswith("linux"):
        return True
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
        print(f"i-mcp launch: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
    return os.getppid() == parent


def too_large_answer(head: bytes, tail: bytes, size: int) -> bytes | None:
    """The JSON-RPC error that answers an oversized message (None when its id cannot be read)."""
    found = _ID.search(head) or _ID.search(tail)
    if found is None:
        return None
    message = (
        f"the server's answer is {size / 2**20:.1f} MB, over i-mcp's limit of {MAX_MESSAGE_BYTES // 2**20} MB "
        "(too large; it was not read)"
    )
    body = (
        b'{"jsonrpc":"2.0","id":'
        + found.group(1)
        + b',"error":{"code":%d,"message":"%s"}}\n'
        % (
            TOO_LARGE,
            message.encode(),
        )
    )
    return body


def relay(source: object, sink: object, limit: int = MAX_MESSAGE_BYTES) -> None:
    """Copy lines from ``source`` to ``sink``; a line over ``limit`` becomes ``too_large_answer``."""
    read = source.readline  # type: ignore[attr-defined]
    write, flush = sink.write, sink.flush  # type: ignore[attr-defined]
    while True:
        line = read(limit + 1)
        if not line:
            return
        if len(line) <= limit or (line.endswith(b"\n") and len(line) == limit + 1):
            write(line)
            flush()
            continue
        head, tail, size = line[:4096], line[-4096:], len(line)
        while not line.endswith(b"\n"):
            line = read(1 << 20)
            if not line:
                break
            size += len(line)
            tail = (tail + line)[-4096:]
        answer = too_large_answer(head, tail, size)
        print(f"i-mcp launch: a message of {size} bytes was over the limit and not passed on", file=sys.stderr)
        if answer is not None:
            write(answer)
            flush()


def main(argv: list[str] | None = None) -> int:
    """Arm the parent-death signal, start the server and relay its stdout until it ends; its exit status."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m i_mcp.launch COMMAND [ARG...]", file=sys.stderr)
        return 2
    if not _die_with_parent():
        return 1  # the worker died before the signal was armed: nobody is left to serve
    try:
        server = subprocess.Popen(args, stdout=subprocess.PIPE, preexec_fn=_die_with_parent)
    except OSError as exc:
        print(f"i-mcp launch: cannot run {args[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    assert server.stdout is not None
    try:
        relay(server.stdout, sys.stdout.buffer)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
    return server.wait()


if __name__ == "__main__":
    sys.exit(main())
