"""The exception types of i-protocol: one base for expected failures, a few precise kinds::

    * ProtocolError             base of every expected failure raised by i-protocol
      + FrameError              a frame broke the wire rules (size, JSON, object, newline)
      + ContextError            a request's workspace, workspace_id or paths are invalid
      + ConfigError             a worker configuration file is missing, unreadable or invalid
        - SettingsError         a settings field has the wrong type or value
      + WorkspaceError          the workspace registry could not give an identity
      + WorkerError             a handler's expected failure: its message becomes the error frame
      + CallError               a host's call to a worker failed (the worker is broken)
        - CallTimeout           the call missed its deadline
        - ErrorFrame            the worker answered with an error frame
      + HistoryError            a history breaks the format (``i_protocol.history``)
      + FileError               a file could not be read, decoded or locked (``i_protocol.files``)
        - FileTooLarge          over the size its reader accepts
        - FileDecodeError       not valid UTF-8 or not valid JSON
        - LockTimeout           its lock was not acquired in time

Each worker package derives its one error type from ``WorkerError``; the core keeps its own
hierarchy (``i_core.errors``) and words its messages from a ``CallError``'s ``problem``.
"""

from __future__ import annotations

__all__ = [
    "CallError",
    "CallTimeout",
    "ConfigError",
    "ContextError",
    "ErrorFrame",
    "FileDecodeError",
    "FileError",
    "FileTooLarge",
    "FrameError",
    "HistoryError",
    "LockTimeout",
    "ProtocolError",
    "SettingsError",
    "WorkerError",
    "WorkspaceError",
]


class ProtocolError(Exception):
    """Base class of every expected failure raised by i-protocol."""

    kind: str | None = None
    """Written as the error frame's ``kind`` when a handler raises it (SPEC §3.4: ``"config"`` for a
    worker's configuration error, read by a host that knows the ``config_kind`` extension)."""


class FrameError(ProtocolError):
    """A frame broke the wire rules: size, JSON, object shape, newline."""


class ContextError(ProtocolError):
    """A request's context (workspace, workspace_id, paths) is invalid."""


class ConfigError(ProtocolError):
    """A worker configuration file is missing, unreadable or invalid."""

    kind = "config"


class WorkspaceError(ProtocolError):
    """The workspace registry could not give an identity for a workspace."""


class WorkerError(ProtocolError):
    """Raised by a handler for an expected failure; its message becomes the error frame."""


class CallError(ProtocolError):
    """A host's call to a worker failed; the worker must be considered broken.

    ``str()`` is ``"worker <worker> <problem>"``. ``problem`` (what went wrong, without naming the
    worker) and ``worker`` are kept apart so that a host which names its workers its own way,
    like the core, words one message from ``problem`` instead of repeating this one inside its own.
    """

    def __init__(self, problem: str, *, worker: str | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.worker = worker

    def __str__(self) -> str:
        return f"worker {self.worker} {self.problem}" if self.worker else self.problem


class CallTimeout(CallError):
    """A host's call to a worker missed its deadline."""


class ErrorFrame(CallError):
    """The worker answered the call with an error frame; ``kind`` is the frame's ``kind`` (``"config"``:
    a configuration error of the worker, SPEC §3.4), ``message`` its ``error`` text."""

    def __init__(self, problem: str, *, worker: str | None = None, kind: str | None = None, message: str = "") -> None:
        super().__init__(problem, worker=worker)
        self.kind = kind
        self.message = message or problem


class HistoryError(ProtocolError):
    """A history or a tool-call batch breaks the history format (``i_protocol.history``)."""


class FileError(ProtocolError):
    """A file could not be read, decoded or locked as ``i_protocol.files`` requires.

    ``str()`` is ``"<path>: <detail>"``; ``path`` and ``detail`` are kept apart so that a caller
    can word its own message. Subclasses say which rule the file broke.
    """

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(path, detail)  # both in args, so the error pickles across processes
        self.path = path
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.path}: {self.detail}"


class FileTooLarge(FileError):
    """A file is over the size its reader accepts (bytes, or characters for text)."""


class FileDecodeError(FileError):
    """A file is not valid UTF-8 text or not valid JSON; ``reason`` is the parser's, with the position."""

    def __init__(self, path: str, detail: str, reason: str) -> None:
        super().__init__(path, detail)
        self.args = (path, detail, reason)
        self.reason = reason


class LockTimeout(FileError):
    """A file's ``<path>.lock`` was not acquired within its timeout."""


class SettingsError(ConfigError):
    """A settings field has the wrong type or value; the message names the file and the field."""
