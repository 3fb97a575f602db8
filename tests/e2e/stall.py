"""A console session on a pseudo-terminal against the scripted model with real latencies: what a
user waits for when a turn compacts. Shared by ``test_prepared_compaction.py`` and
``bench/compaction_stall.py``.

The model answers a conversation request after ``reply_delay`` seconds and a summary request (one
without tool schemas) after ``summary_delay``; every user line carries ``FILLER`` (~4 KB), and the
window (``WINDOW``) is sized so that the budget's trigger comes at turn 4.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FILLER = "The build log said: " + "step ok, tests green; " * 180  # ~4 KB of English per user line
WINDOW = 8000
"""With max_tokens 256 and the compact profile's tools, the estimate passes 70% of the trigger after
turn 3 and the trigger at turn 4."""
SUMMARY_TEXT = (
    "<continuation_summary>\n## Latest user request\nkeep counting turns\n"
    "## Next step\nanswer the next turn\n</continuation_summary>"
)
_STATUS = re.compile(rb"(\d+) compactions?")


@dataclass
class ModelLog:
    """When each request arrived, by kind (``summary`` or ``turn``)."""

    times: list[tuple[str, float]] = field(default_factory=list)

    def summaries(self) -> list[float]:
        return [at for kind, at in self.times if kind == "summary"]


def responder(log: ModelLog, reply_delay: float, summary_delay: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A scripted-model step: a summary after ``summary_delay`` s, a short answer after ``reply_delay`` s."""

    def step(request: dict[str, Any]) -> dict[str, Any]:
        if not request.get("tools"):
            log.times.append(("summary", time.monotonic()))
            return {"text": SUMMARY_TEXT, "delay": summary_delay}
        log.times.append(("turn", time.monotonic()))
        turn = sum(1 for m in request.get("messages", []) if m.get("role") == "user")
        return {"text": f"noted turn {turn}.", "delay": reply_delay}

    return step


def config(base_url: str, prepare: str = "auto", **extra: Any) -> dict[str, Any]:
    """config.json of the scenario."""
    return {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "max_tokens": 256,
        "retries": 0,
        "timeout": 60,
        "stream": False,
        "prepare": prepare,
        "budget": {"context_window": WINDOW},
        **extra,
    }


class Console:
    """``i`` on a pseudo-terminal: type lines, wait for what the screen shows, time each turn."""

    def __init__(self, project: Path, env: dict[str, str], *extra: str) -> None:
        argv = [str(Path(sys.executable).parent / "i"), "-C", str(project), "--no-logo", "--session-name", "s", *extra]
        env = {**env, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: the real console on the pseudo-terminal
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(argv[0], argv, env)
        self.seen = b""
        self.compactions = 0

    def read(self, timeout: float = 0.05) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                self.seen += os.read(self.fd, 65536)
            except OSError:
                pass

    def until(self, marker: bytes, since: int = 0, seconds: float = 60) -> int:
        """Wait until ``marker`` is on the terminal after offset ``since``; its end offset."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            found = self.seen.find(marker, since)
            if found >= 0:
                return found + len(marker)
            self.read()
        raise AssertionError(f"{marker!r} not seen; last output:\n{self.seen[-3000:].decode(errors='replace')}")

    def prompt(self) -> None:
        """Wait for the first prompt."""
        self.until(b"> ")

    def turn(self, text: str) -> tuple[float, bool]:
        """Type ``text`` and wait for the answer's status line and the next prompt: (seconds, whether
        this turn compacted)."""
        since = len(self.seen)
        start = time.monotonic()
        os.write(self.fd, text.encode() + b"\r")
        # The prompt after the status line (a prompt drawn before this turn may still be unread).
        after = self.until(b"> ", self.until(b"compaction", since))
        elapsed = time.monotonic() - start
        counts = _STATUS.findall(self.seen[since:after])
        count = int(counts[-1]) if counts else self.compactions
        compacted, self.compactions = count > self.compactions, count
        return elapsed, compacted

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> int:
        """``/exit`` and wait for the process; its exit status."""
        try:
            os.write(self.fd, b"/exit\r")
        except OSError:
            pass
        return self.wait()

    def wait(self, seconds: float = 30) -> int:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.read()
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        self.kill()
        raise AssertionError("i did not exit")

    def kill(self) -> None:
        """SIGKILL, no clean-up (a crash, a closed laptop)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ProcessLookupError, ChildProcessError):
            pass
        try:
            os.close(self.fd)
        except OSError:
            pass
