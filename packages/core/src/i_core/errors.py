"""The core's expected failures, each with the exit code the `i` command uses for it."""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_CONFIG = 3
EXIT_MODEL = 4
EXIT_BUDGET = 5
EXIT_WORKER = 6
EXIT_INTERRUPTED = 130


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
