"""After Ctrl-C: kill what the interrupted call was running (no replay)."""

from __future__ import annotations

import os
import signal
import subprocess

from i_protocol.host import WorkerProcess


def stop_interrupted(exc: BaseException) -> None:
    """Kill what the call ``exc`` (a KeyboardInterrupt) interrupted was running.

    The frames the KeyboardInterrupt passed through name it: a shell tool's process (its whole
    process group, started with ``start_new_session``) and a worker caught mid-call (killed, so the
    pool evicts it and a later call starts a fresh one instead of reading a stale answer).
    """
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self")
        if isinstance(owner, WorkerProcess):
            owner.kill()
        process = frame.f_locals.get("process")
        if isinstance(process, subprocess.Popen) and frame.f_globals.get("__name__", "").startswith("i_core.tools"):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        tb = tb.tb_next
