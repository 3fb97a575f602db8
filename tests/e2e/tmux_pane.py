"""A tmux pane for the console tests that read the screen: one tmux server of its own (``-L``),
one session ``t``, polled within a timeout scaled by ``I_TEST_TIME_SCALE`` (default 4). Without tmux
a test skips on a developer's machine and fails under CI (``CI=true``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

SCALE = float(os.environ.get("I_TEST_TIME_SCALE", "4"))
TIMEOUT = 15 * SCALE


class TmuxPane:
    """The tmux server, its config (``remain-on-exit``) and the file the pane's script writes its
    program's exit status to; each test file's subclass starts what it runs."""

    def __init__(self, socket: str, tmp: Path) -> None:
        self.socket = socket
        self.conf = tmp / "tmux.conf"
        self.status = tmp / "exit-status"
        self.conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")

    def tmux(self, *args: str) -> str:
        command = ["tmux", "-L", self.socket, "-f", str(self.conf), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True, timeout=30).stdout

    def screen(self) -> str:
        return self.tmux("capture-pane", "-p", "-J", "-S", "-", "-t", "t")

    def keys(self, *keys: str) -> None:
        self.tmux("send-keys", "-t", "t", *keys)

    def wait_for(self, condition: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            if condition():
                return
            time.sleep(0.1)  # polling interval, not a wait for something to happen
        raise AssertionError(f"{what} not seen within {TIMEOUT:.0f} s; the pane shows:\n{self.screen()}")

    def wait_text(self, text: str, count: int = 1) -> None:
        self.wait_for(lambda: self.screen().count(text) >= count, repr(text))

    def wait_exit(self) -> int:
        """The exit status of the pane's program once it has ended."""
        self.wait_for(self.status.exists, "i exiting")
        return int(self.status.read_text())


P = TypeVar("P", bound=TmuxPane)


def open_pane(kind: type[P], prefix: str, tmp: Path) -> Iterator[P]:
    """A fixture's body: the pane, and its tmux server killed afterwards."""
    if shutil.which("tmux") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("tmux is not installed: CI must install it (.ci/run: apt-get install tmux)")
        pytest.skip("tmux is not installed")
    result = kind(f"{prefix}-{os.getpid()}-{time.monotonic_ns()}", tmp)
    try:
        yield result
    finally:
        subprocess.run(["tmux", "-L", result.socket, "kill-server"], capture_output=True, timeout=30)
