"""The core's expected failures, each with the exit code the `i` command uses for it.

Exit codes of `i`: 0 done, 1 an internal error (a bug: the one line says so), 2 usage,
3 configuration, session or a file or folder the run needs, 4 model/API, 5 budget exhausted,
6 worker failure, 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
"""

from __future__ import annotations

import os
from pathlib import Path

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_MODEL = 4
EXIT_BUDGET = 5
EXIT_WORKER = 6
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class CoreError(Exception):
    """Base of every expected failure of the core; its message is shown to the user as is."""

    exit_code = EXIT_FAILURE


class ConfigError(CoreError):
    """A configuration file, manifest, profile or binding is invalid."""

    exit_code = EXIT_CONFIG


class WorkerFailure(CoreError):
    """A worker call failed (the worker has been evicted)."""

    exit_code = EXIT_WORKER


class ModelError(CoreError):
    """The model API failed or answered something unusable."""

    exit_code = EXIT_MODEL


class BudgetExhausted(CoreError):
    """The next request cannot fit the context budget and nothing could compact it."""

    exit_code = EXIT_BUDGET


class SessionError(CoreError):
    """A session file is unreadable, corrupt or belongs to another workspace."""

    exit_code = EXIT_CONFIG


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
