"""A wall-clock deadline for the tools whose cost the model's pattern decides (``search``, ``glob``).

Python's ``re`` has no timeout, and a pattern such as ``(a+)+$`` backtracks for longer than the
universe exists on one line of ``a``s. The tool's whole call runs under ``ctx.pattern_deadline``
(default ``PATTERN_DEADLINE``, 5 s), enforced one of two ways:

- **In the main thread on POSIX** (how the core runs tools): ``signal.setitimer(ITIMER_REAL)``
  arms SIGALRM; its handler raises inside the running code. ``re`` checks for signals while it
  matches, and interrupted system calls (a slow ``scandir`` or ``read``) run the handler too, so
  the call stops within milliseconds of the deadline. The previous SIGALRM handler is restored.
- **Anywhere else** (another thread, Windows, or an interval timer already in use by the
  embedding program): the call runs in a child Python process (``tools/child.py``: the call in on
  stdin, its result out on stdout as JSON). On POSIX the child's main thread arms the same alarm;
  everywhere the parent kills the child once the deadline plus 2 s for its start-up has passed
  (the only enforcement on Windows). This costs a process start (~0.1 s) but stops any pattern: a
  thread cannot be stopped, and a runaway match in one holds the GIL.

The runner is passed in: ``dispatch.prepare`` hands ``within_deadline`` (or the child's
``in_child``) to the ``glob`` and ``search`` preparers, so that no tool module imports this one and
this one imports no tool (the child's entry, which runs any tool, is ``tools/child.py``).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ToolError
from .contract import DEFAULT_PATTERN_DEADLINE, DeadlineRunner, ToolContext, ToolResult, normal_env, seconds_text

PATTERN_DEADLINE = DEFAULT_PATTERN_DEADLINE
# Extra time the child process gets for its own start-up before the deadline counts.
_CHILD_STARTUP_SECONDS = 2.0
_CHILD = "import sys; from i_core.tools.child import child_main; sys.exit(child_main())"


__all__ = ["PATTERN_DEADLINE", "DeadlineRunner", "in_child", "seconds_text", "within_deadline"]


class _Expired(BaseException):
    """Raised by the SIGALRM handler inside the running tool (a BaseException: no handler swallows it)."""


def within_deadline(
    tool: str, arguments: dict[str, Any], ctx: ToolContext, work: Callable[[], ToolResult], expired: Callable[[], str]
) -> ToolResult:
    """``work()``, stopped at ``ctx.pattern_deadline`` seconds with ``ToolError(expired())``.

    ``tool`` and ``arguments`` let the fallback re-run the same call in a child process.
    """
    seconds = ctx.pattern_deadline
    if seconds <= 0:
        return work()
    if _can_alarm():
        return _with_alarm(seconds, work, expired)
    return _run_in_child(tool, arguments, ctx, expired)


def in_child(
    tool: str, arguments: dict[str, Any], ctx: ToolContext, work: Callable[[], ToolResult], expired: Callable[[], str]
) -> ToolResult:
    """The runner of the fallback's child process: the alarm where it can, else ``work()`` alone (no
    SIGALRM here, e.g. Windows: the parent kills this process at the deadline); never another child."""
    seconds = ctx.pattern_deadline
    if seconds > 0 and _can_alarm():
        return _with_alarm(seconds, work, expired)
    return work()


def _can_alarm() -> bool:
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        return False
    # An interval timer someone else armed must not be cancelled or stolen, and a handler installed
    # outside Python (getsignal: None) could not be put back.
    return signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is not None


def _with_alarm(seconds: float, work: Callable[[], ToolResult], expired: Callable[[], str]) -> ToolResult:
    def on_alarm(signum: int, frame: object) -> None:
        raise _Expired

    try:
        previous = signal.signal(signal.SIGALRM, on_alarm)
    except ValueError:  # pragma: no cover - not the main interpreter
        raise ToolError(expired()) from None
    try:
        try:
            signal.setitimer(signal.ITIMER_REAL, seconds)
            return work()
        finally:
            # One shot, no interval: once this ran or the alarm fired, no further alarm comes.
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Expired:
        raise ToolError(expired()) from None
    finally:
        signal.signal(signal.SIGALRM, previous)


def _run_in_child(tool: str, arguments: dict[str, Any], ctx: ToolContext, expired: Callable[[], str]) -> ToolResult:
    request = {
        "tool": tool,
        "arguments": arguments,
        "workspace": str(ctx.workspace),
        "max_output_chars": ctx.max_output_chars,
        "pattern_deadline": ctx.pattern_deadline,
    }
    env = normal_env()
    env["PYTHONUTF8"] = "1"
    try:
        done = subprocess.run(
            # -P: the workspace (or the current folder) never shadows a module the child imports.
            [sys.executable, "-P", "-c", _CHILD],
            input=json.dumps(request).encode("ascii"),  # ASCII: a lone surrogate travels as \udXXX
            capture_output=True,
            timeout=ctx.pattern_deadline + _CHILD_STARTUP_SECONDS,
            env=env,
        )
    except subprocess.TimeoutExpired:
        raise ToolError(expired()) from None
    except OSError as exc:
        raise ToolError(f"{tool}: could not start the helper process that enforces its deadline: {exc}") from None
    try:
        answer = json.loads(done.stdout)
        if "error" in answer:
            raise ToolError(str(answer["error"]))
        return ToolResult(str(answer["output"]), is_error=bool(answer.get("is_error")))
    except (ValueError, KeyError, TypeError):
        tail = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit code {done.returncode}"]
        raise ToolError(f"{tool}: the helper process that enforces its deadline failed: {tail[0][:300]}") from None
