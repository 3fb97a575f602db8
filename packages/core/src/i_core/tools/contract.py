"""The types every built-in tool shares: its context, its result and its prepared call."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

APPROVAL_TOKEN_ENV = "I_APPROVAL_TOKEN"
DEFAULT_MAX_OUTPUT_CHARS = 200_000
DEFAULT_SHELL_TIMEOUT = 120.0
# Seconds a whole ``search`` or ``glob`` call may take (the model's pattern decides its cost): deadline.py.
DEFAULT_PATTERN_DEADLINE = 5.0


def seconds_text(seconds: float) -> str:
    """``5`` for 5.0, ``0.5`` for 0.5: how a deadline is written in messages."""
    return f"{seconds:g}"


def normal_env() -> dict[str, str]:
    """This process's environment without the approval token (what `shell` commands inherit)."""
    return {key: value for key, value in os.environ.items() if key != APPROVAL_TOKEN_ENV}


@dataclass
class ToolContext:
    """Where and with what limits the built-in tools run."""

    workspace: Path
    env: dict[str, str] = field(default_factory=normal_env)
    shell_timeout: float = DEFAULT_SHELL_TIMEOUT
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    output_bytes: int | None = None
    """UTF-8 bytes this call's output may take: the budget's per-call tool-output figure, which the core
    cuts every result to (set per batch; ``recall`` comes in parts within it). None: not known."""
    pattern_deadline: float = DEFAULT_PATTERN_DEADLINE
    archived: Callable[[], list[Any]] | None = None
    """The session's archived generations (``archive.Generation``), read when ``recall`` asks; None: no session."""
    sandbox: dict[str, Any] | None = None
    """The sandbox this call's policy answer set (``shell``: ``{mode, network}``, ``i_core.sandbox``); None: none."""

    def __post_init__(self) -> None:
        # Relative arguments resolve against this, so it must be absolute and normalised once.
        self.workspace = Path(os.path.abspath(self.workspace))


@dataclass
class ToolResult:
    """A tool's answer: text for the model, optional image parts, and whether it failed."""

    output: str
    images: list[dict[str, Any]] = field(default_factory=list)
    is_error: bool = False


@dataclass(frozen=True)
class Snapshot:
    """What a file looked like when its change was shown for approval (absent: ``exists`` False)."""

    exists: bool
    digest: str = ""
    size: int = 0
    mtime_ns: int = 0


@dataclass(frozen=True)
class Prepared:
    """A validated tool call waiting for approval; ``summary`` is the one line the user is asked about."""

    name: str
    arguments: dict[str, Any]
    summary: str
    path: Path | None = None
    snapshot: Snapshot | None = None
    run: Callable[[ToolContext], ToolResult] = field(repr=False, compare=False, default=lambda ctx: ToolResult(""))


class DeadlineRunner(Protocol):
    """How a ``glob`` or ``search`` call runs under its deadline (``within_deadline``, ``in_child``)."""

    def __call__(
        self,
        tool: str,
        arguments: dict[str, Any],
        ctx: ToolContext,
        work: Callable[[], ToolResult],
        expired: Callable[[], str],
        /,
    ) -> ToolResult:
        """``work()``, stopped at ``ctx.pattern_deadline`` seconds with ``ToolError(expired())``."""
        ...
