"""The exception type of i-worker-memory for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - MemoryStoreError          a bad key or value, a limit, a credential, a corrupt store file

A tool call that raises it is answered to the model as that tool's error; a hook that raises it
fails the event in the core (exit 6), naming this worker and the message.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["MemoryStoreError"]


class MemoryStoreError(WorkerError):
    """An expected failure (bad key/value, limit, credential, corrupt file); becomes an error frame."""
