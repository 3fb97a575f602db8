"""The exception type of i-worker-checkpoint for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - CheckpointError           a bad event, a damaged store, an undo that cannot be done

A hook that raises it fails the event in the core, naming this worker and the message.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["CheckpointError"]


class CheckpointError(WorkerError):
    """An expected failure (bad data, damaged store, refused undo); becomes an error frame."""
