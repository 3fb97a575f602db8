"""The exception types of i-protocol: one base for expected failures, a few precise kinds."""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of every expected failure raised by i-protocol."""


class FrameError(ProtocolError):
    """A frame broke the wire rules: size, JSON, object shape, newline."""


class ContextError(ProtocolError):
    """A request's context (workspace, workspace_id, paths) is invalid."""


class ConfigError(ProtocolError):
    """A worker configuration file is missing, unreadable or invalid."""


class WorkspaceError(ProtocolError):
    """The workspace registry could not give an identity for a workspace."""


class WorkerError(ProtocolError):
    """Raised by a handler for an expected failure; its message becomes the error frame."""


class CallError(ProtocolError):
    """A host's call to a worker failed; the worker must be considered broken."""


class CallTimeout(CallError):
    """A host's call to a worker missed its deadline."""


class ErrorFrame(CallError):
    """The worker answered the call with an error frame."""


class HistoryError(ProtocolError):
    """A history or a tool-call batch breaks the history format (``i_protocol.history``)."""
