"""Run an MCP server so that it dies with its worker: ``python -m i_mcp.launch COMMAND [ARG...]``.

The MCP SDK starts every server in a new session, out of reach of the process-group kill with
which the core's reaper ends a worker and everything it started. On Linux this launcher asks the
kernel (``prctl(PR_SET_PDEATHSIG, SIGKILL)``) to kill the server when the thread that started it
dies (the worker's event-loop thread, which lives as long as the worker), however the worker
ends, even by SIGKILL; then it replaces itself with the server (``execvp``: same pid, nothing in
between). Elsewhere it only execs, and the worker's own shutdown stops its servers.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def main(argv: list[str] | None = None) -> int:
    """Arm the parent-death signal, then exec the server; returns only when that fails."""
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: python -m i_mcp.launch COMMAND [ARG...]", file=sys.stderr)
        return 2
    parent = os.getppid()
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            print(f"i-mcp launch: prctl failed: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        elif os.getppid() != parent:
            return 1  # the worker died before the signal was armed: nobody is left to serve
    try:
        os.execvp(args[0], args)
    except OSError as exc:
        print(f"i-mcp launch: cannot run {args[0]}: {exc.strerror or exc}", file=sys.stderr)
        return 127
    return 0  # not reached: execvp replaced this process


if __name__ == "__main__":
    sys.exit(main())
