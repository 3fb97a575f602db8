"""The core's expected failures, each with the exit code the `i` command uses for it.

Every class is defined here (other modules import them) and drawn once::

    * CoreError ............... 1   base; reaching the user as it is would be a bug
      + ConfigError ........... 3   a configuration file, manifest, profile or binding is invalid
      + SessionError .......... 3   a session file is unreadable, corrupt or of another workspace
        - UndoRefused ......... 3   an undo cannot be done: no checkpoint module, no such turn, a
                                    turn inside a compacted span, or one undone already
      + ModelError ............ 4   the model API failed or answered something unusable
        - ProviderError ....... 4   a request could not be built, or the answer has the wrong shape
        - TransportError ...... 4   the endpoint was unreachable or answered an HTTP error
        - ContextTooLong ...... 4   the server refused the request as too long (recovered once)
      + BudgetExhausted ....... 5   the next request cannot fit and nothing could compact it
      + WorkerFailure ......... 6   a worker call failed (the worker was evicted)
        - HookResultError ..... 6   a hook answered, but not what its event must return
        - WorkerIncompatible .. 6   a worker is refused by the handshake: a protocol this core does
                                    not speak, or a release the compatibility table rules out
      + CompactionError ....... 1   a compaction step refused; becomes the attempt's outcome
      + ToolError ............. 1   a tool call failed; becomes the tool result the model reads

The last two never end a run: the compaction transaction and the tool-call pipeline turn them
into an outcome and a tool error, so one that reaches the user is a bug (exit 1). The history
format's ``HistoryError`` lives with its validator (``i_protocol.history``); a history that
breaks it can only come from a hook, so the command line maps it to exit 6 too.

Exit codes of `i`: 0 done, 1 an internal error (a bug: the one line says so), 2 usage,
3 configuration, session or a file or folder the run needs, 4 model/API, 5 budget exhausted,
6 worker failure (a worker the ``hello`` handshake refuses too: ``WorkerIncompatible``), 7 the
installed i-protocol does not fit this core (``preflight``: missing, outside the needed range, or
another build of the version), 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import preflight
from .__about__ import NEEDS_PROTOCOL, __version__

__all__ = [
    "EXIT_BUDGET",
    "EXIT_CONFIG",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_MODEL",
    "EXIT_PROTOCOL",
    "EXIT_TERMINATED",
    "EXIT_USAGE",
    "EXIT_WORKER",
    "BudgetExhausted",
    "CompactionError",
    "ConfigError",
    "ContextTooLong",
    "CoreError",
    "HookResultError",
    "ModelError",
    "ProviderError",
    "SessionError",
    "ToolError",
    "TransportError",
    "UndoRefused",
    "WorkerFailure",
    "WorkerIncompatible",
    "blocking_file",
    "describe_failure",
    "os_problem",
]

EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_MODEL = 4
EXIT_BUDGET = 5
EXIT_WORKER = 6
EXIT_PROTOCOL = 7  # equals preflight.EXIT_PROTOCOL (every console script's, a test compares them)
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class CoreError(Exception):
    """Base of every expected failure of the core; its message is shown to the user as is."""

    exit_code = EXIT_FAILURE


class ConfigError(CoreError):
    """A configuration file, manifest, profile or binding is invalid."""

    exit_code = EXIT_CONFIG


class SessionError(CoreError):
    """A session file is unreadable, corrupt or belongs to another workspace."""

    exit_code = EXIT_CONFIG


class UndoRefused(SessionError):
    """An undo cannot be done (no checkpoint module, no such turn, a compacted or undone turn)."""


class ModelError(CoreError):
    """The model API failed or answered something unusable."""

    exit_code = EXIT_MODEL


class ProviderError(ModelError):
    """A model request could not be built, or the model's answer has an unusable shape."""


class TransportError(ModelError):
    """The model endpoint could not be reached or answered with an error or an unusable body.

    ``status`` is the HTTP status (None when no response came); ``provider_message`` is the
    provider's own error text when it gave one. Messages never include request bodies or headers.
    """

    def __init__(self, message: str, *, status: int | None = None, provider_message: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message


class ContextTooLong(ModelError):
    """The model server refused a request as too long for its context window.

    ``input_tokens`` and ``limit`` are the server's own counts when its message gave them (else
    None); ``provider_message`` is its error text; ``status`` the HTTP status (None for an error
    sent inside a stream or a 200 body). Never retried: the same request would be refused again.
    """

    def __init__(
        self,
        *,
        input_tokens: int | None = None,
        limit: int | None = None,
        provider_message: str | None = None,
        status: int | None = None,
    ) -> None:
        self.input_tokens = input_tokens
        self.limit = limit
        self.provider_message = provider_message
        self.status = status
        super().__init__(self._describe())

    def _describe(self) -> str:
        text = "the model server refused the request as too long for its context"
        if self.input_tokens is not None and self.limit is not None:
            if self.input_tokens > self.limit:
                return f"{text} ({self.input_tokens} tokens > {self.limit})"
            return f"{text} ({self.input_tokens} input tokens plus the requested output > {self.limit})"
        if self.limit is not None:
            return f"{text} (limit {self.limit} tokens)"
        if self.input_tokens is not None:
            return f"{text} ({self.input_tokens} tokens)"
        return f"{text}: {self.provider_message}" if self.provider_message else text


class BudgetExhausted(CoreError):
    """The next request cannot fit the context budget and nothing could compact it."""

    exit_code = EXIT_BUDGET


class WorkerFailure(CoreError):
    """A worker call failed (the worker has been evicted)."""

    exit_code = EXIT_WORKER


class HookResultError(WorkerFailure):
    """A hook answered, but not with what its event must return (``hook_results``).

    ``check`` names the rule for the compaction events (``invalid_cut``, ``summary_reply_invalid``,
    ``invalid_candidate``), so that a refused compaction reports the same check whoever found it.
    """

    def __init__(self, message: str, *, check: str | None = None) -> None:
        super().__init__(message)
        self.check = check


class WorkerIncompatible(WorkerFailure):
    """The ``hello`` handshake refused a worker before it was used (``i_core.handshake``): one line
    naming the package, its version, the range needed and the command that fixes it."""


class CompactionError(CoreError):
    """A step of the compaction transaction failed; ``check`` names the step, nothing was committed."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(message)
        self.check = check


class ToolError(CoreError):
    """An expected tool failure; the agent loop returns its message to the model as a tool error."""


def blocking_file(path: str | os.PathLike[str]) -> Path | None:
    """The nearest of ``path`` and its ancestors that exists but is not a folder, or None.

    ``a/file.txt/x.json`` cannot be created or read because ``a/file.txt`` is a regular file: the
    OS only says "Not a directory" or "File exists" and names the whole path.
    """
    candidate = Path(path)
    for step in (candidate, *candidate.parents):
        try:
            if step.exists():
                return None if step.is_dir() else step
        except OSError:
            continue
    return None


def os_problem(exc: OSError) -> str:
    """``PATH: what is wrong`` for an ordinary OS error, in one line."""
    path = exc.filename
    reason = exc.strerror or str(exc) or type(exc).__name__
    if isinstance(exc, FileExistsError | NotADirectoryError) and isinstance(path, str):
        blocker = blocking_file(path)
        if blocker is not None:
            return f"{blocker} is a file, not a folder"
    if exc.filename2 is not None:
        return f"{path} -> {exc.filename2}: {reason}"
    return f"{path}: {reason}" if path is not None else reason


def describe_failure(exc: BaseException) -> tuple[str, int]:
    """The one line (without ``i: ``) and the exit code of a failure that ended a command."""
    # Imported here, not above: this module must import without i-protocol, so that a missing or
    # other build of it can still be described (``preflight.another_build``).
    from i_protocol import ProtocolError
    from i_protocol.history import HistoryError

    if isinstance(exc, HistoryError):
        # The core builds valid histories; an invalid one came from a hook (before_save, after_tool, ...).
        return (
            f"a hook returned an invalid history: {_one_line(exc)} (nothing was saved: the last checkpoint "
            "is unchanged)",
            EXIT_WORKER,
        )
    if isinstance(exc, ImportError):
        # The console script checked the version, so an i_protocol import failing means another build.
        problem = preflight.another_build("i-core", __version__, NEEDS_PROTOCOL, exc)
        if problem is not None:
            return problem, EXIT_PROTOCOL
    if isinstance(exc, CoreError) and exc.exit_code != EXIT_FAILURE:
        return str(exc), exc.exit_code
    if isinstance(exc, ProtocolError):
        return str(exc), EXIT_CONFIG
    if isinstance(exc, OSError):
        return os_problem(exc), EXIT_CONFIG
    detail = f"{type(exc).__name__}: {_one_line(exc)}" if str(exc) else type(exc).__name__
    return f"unexpected error: {detail} (this is a bug: please report it); I_DEBUG=1 shows the traceback", EXIT_FAILURE


def _one_line(exc: BaseException, limit: int = 1000) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
