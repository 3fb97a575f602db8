"""Piped input: ``cat hello.py | i "explain this code"`` attaches stdin to the task.

The rule (``packages/core/README.md``, "Piped input"): with a task, stdin is read only when it is a
pipe, a socket or a regular file, never a terminal or a character device such as ``/dev/null``.
It is read until end of file within a bounded wait: nothing at all within ``FIRST_WAIT_S`` (a
program that starts ``i "task"`` with an open stdin it never writes to or closes) attaches
nothing; once data comes, reading goes on to end of file for at most ``MAX_WAIT_S`` in all. At
most ``MAX_BYTES`` are attached. What was left unread is said. Without a task stdin stays line
mode: one request per line.
"""

from __future__ import annotations

import os
import select
import stat
import time
from dataclasses import dataclass
from typing import Any

MAX_BYTES = 256 * 1024
FIRST_WAIT_S = 2.0
"""How long stdin may stay silent before its first byte (or end of file): then nothing is attached."""
MAX_WAIT_S = 60.0
"""How long reading may take in all, for a producer that keeps its pipe open."""


@dataclass(frozen=True)
class Piped:
    """What stdin held: its text (None when nothing is attached), and how the reading ended."""

    text: str | None
    size: int
    cut: bool = False
    """More than ``MAX_BYTES`` came: only the first ``MAX_BYTES`` are attached."""
    silent: bool = False
    """Nothing arrived within ``FIRST_WAIT_S``, and no end of file either."""
    stopped: bool = False
    """Reading stopped after ``MAX_WAIT_S`` without end of file: the rest was not read."""
    binary: bool = False
    """The bytes are not text (a NUL byte): nothing is attached."""

    def part(self) -> dict[str, Any]:
        """The text part that goes before the task in the user message."""
        assert self.text is not None
        head = f"[piped input (stdin), {self.size:,} bytes" + (f", cut at {MAX_BYTES // 1024} KiB" if self.cut else "")
        return {"type": "text", "text": f"{head}]\n{self.text}", "_stdin": True}

    def note(self) -> str:
        """The line that tells the user what was attached (stderr)."""
        if self.binary:
            return f"[i] stdin: {self.size:,} bytes of binary data, not attached (pipe text only)"
        if self.text is None:
            if self.silent:
                return f"[i] stdin: nothing arrived within {FIRST_WAIT_S:g} s; nothing attached"
            return "[i] stdin: empty; nothing attached"
        lines = self.text.count("\n") + (0 if self.text.endswith("\n") else 1)
        said = f"[i] attached stdin: {self.size:,} bytes, {lines:,} line{'s' if lines != 1 else ''}"
        if self.cut:
            said += f" (cut at {MAX_BYTES // 1024} KiB: the rest was not read)"
        elif self.stopped:
            said += f" (stdin was still open after {MAX_WAIT_S:g} s: the rest was not read)"
        return said


def attachable(fd: int) -> bool:
    """Whether ``fd`` is a pipe, a socket or a regular file (never a terminal or a device)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False  # closed
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode)


def read_piped(
    fd: int, *, limit: int = MAX_BYTES, first_wait: float = FIRST_WAIT_S, max_wait: float = MAX_WAIT_S
) -> Piped | None:
    """Read ``fd`` for the task when it is attachable; None when it is not (a TTY, /dev/null, closed)."""
    if not attachable(fd):
        return None
    data = bytearray()
    silent = stopped = False
    regular = stat.S_ISREG(os.fstat(fd).st_mode)
    end = time.monotonic() + max_wait
    while len(data) <= limit:
        wait = first_wait if not data else end - time.monotonic()
        if not regular and not _ready(fd, min(wait, end - time.monotonic())):
            silent, stopped = not data, bool(data)
            break
        try:
            chunk = os.read(fd, min(65536, limit + 1 - len(data)))
        except BlockingIOError:
            continue
        except OSError:
            break
        if not chunk:
            break
        data.extend(chunk)
    cut = len(data) > limit
    raw = bytes(data[:limit])
    if not raw:
        return Piped(None, 0, silent=silent)
    if b"\0" in raw:
        return Piped(None, len(raw), binary=True)
    text = raw.decode("utf-8", errors="replace")
    if cut:
        text = text.rstrip("\ufffd")  # a character split at the cut
    return Piped(text, len(raw), cut=cut, stopped=stopped)


def _ready(fd: int, within: float) -> bool:
    """Whether ``fd`` has data (or end of file) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:
            continue
        return bool(ready)
