"""The exception type of i-worker-compact for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - CompactError              invalid request data, compact.json or prompt file, a plan that cannot fit

A ``CompactError`` reaches the core as an error frame on a compaction event, and the core records
it as the attempt's ``worker_failed`` outcome (nothing is committed).
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["CompactError"]


class CompactError(WorkerError):
    """An expected failure of the compact worker; its message is what the user reads."""
