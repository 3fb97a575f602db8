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
    """mcp.json (or a file it names) is invalid; the message names the file, the server and the field."""


class ServerFailure(WorkerError):
    """A server could not start, exited, broke the protocol or did not answer within its deadline."""
