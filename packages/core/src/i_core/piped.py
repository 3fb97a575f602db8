"""Piped input: ``cat hello.py | i "explain this code"`` attaches stdin to the task.

The rule (``packages/core/README.md``, "Piped input"): with a task, stdin is read only when it is a
pipe, a socket or a regular file, never a terminal or a character device such as ``/dev/null``.
It is read until end of file, as long as data keeps coming: a program that starts ``i "task"``
with an open stdin it never writes to or closes costs ``IDLE_WAIT_S`` and nothing more. At most
``MAX_BYTES`` are attached (the rest is not read, and the user is told). Without a task stdin stays
line mode: one request per line.
"""

from __future__ import annotations

import os
import select
import stat
import time
from dataclasses import dataclass
from typing import Any

MAX_BYTES = 256 * 1024
IDLE_WAIT_S = 2.0
"""How long a pipe may stay silent (before its first byte or between two) before reading stops."""


@dataclass(frozen=True)
class Piped:
    """What stdin held: its text (None when nothing is attached), and how the reading ended."""

    text: str | None
    size: int
    cut: bool = False
    """More than ``MAX_BYTES`` came: only the first ``MAX_BYTES`` are attached."""
    silent: bool = False
    """Reading stopped because nothing arrived for ``IDLE_WAIT_S``, not at end of file."""
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
                return f"[i] stdin: nothing arrived within {IDLE_WAIT_S:g} s; nothing attached"
            return "[i] stdin: empty; nothing attached"
        lines = self.text.count("\n") + (0 if self.text.endswith("\n") else 1)
        said = f"[i] attached stdin: {self.size:,} bytes, {lines:,} line{'s' if lines != 1 else ''}"
        if self.cut:
            said += f" (cut at {MAX_BYTES // 1024} KiB: the rest was not read)"
        elif self.silent:
            said += f" (stdin stayed open; stopped after {IDLE_WAIT_S:g} s without data)"
        return said


def attachable(fd: int) -> bool:
    """Whether ``fd`` is a pipe, a socket or a regular file (never a terminal or a device)."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False  # closed
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISREG(mode)


def read_piped(fd: int, *, limit: int = MAX_BYTES, idle: float = IDLE_WAIT_S) -> Piped | None:
    """Read ``fd`` for the task when it is attachable; None when it is not (a TTY, /dev/null, closed)."""
    if not attachable(fd):
        return None
    data = bytearray()
    silent = False
    regular = stat.S_ISREG(os.fstat(fd).st_mode)
    while len(data) <= limit:
        if not regular and not _ready(fd, idle):
            silent = True
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
        return Piped(None, 0, silent=silent) if silent else Piped(None, 0)
    if b"\0" in raw:
        return Piped(None, len(raw), binary=True)
    text = raw.decode("utf-8", errors="replace")
    if cut:
        text = text.rstrip("\ufffd")  # a character split at the cut
    return Piped(text, len(raw), cut=cut, silent=silent)


def _ready(fd: int, idle: float) -> bool:
    """Whether ``fd`` has data (or end of file) within ``idle`` seconds."""
    deadline = time.monotonic() + idle
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            ready, _, _ = select.select([fd], [], [], left)
        except InterruptedError:
            continue
        return bool(ready)
