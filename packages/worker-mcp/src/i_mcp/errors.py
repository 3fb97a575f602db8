"""The exception type of i-worker-mcp for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - McpConfigError            mcp.json is invalid (a field, a literal secret, an unreadable env file)
        - ServerFailure             a server could not start, exited, broke the protocol or did not answer

A ``ServerFailure`` during a tool call is answered as that call's result with ``"is_error": true``
(the worker stays up); during ``tools_list`` it fails the event, naming the server.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["McpConfigError", "ServerFailure"]


class McpConfigError(WorkerError):
    """mcp.json (or a file it names) is invalid; the message names the file, the server and the field.

    Its error frame carries ``"kind": "config"`` (SPEC §3.4): the core exits as for its own
    configuration errors."""

    kind = "config"


class ServerFailure(WorkerError):
    """A server could not start, exited, broke the protocol or did not answer within its deadline;
    ``stderr_tail`` is the end of what it wrote on stderr (empty when nothing)."""

    def __init__(self, message: str, *, stderr_tail: str = "") -> None:
        super().__init__(message)
        self.stderr_tail = stderr_tail
