"""The exception types of i-worker-cache for expected failures, drawn with the ones they build on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - CacheError                bad settings or request data; the cache-report command's failures
          - CorruptStats            the stats file cannot be read as a stats document

Not drawn: ``usage.UnknownUsage`` is no failure but a verdict ("this usage cannot be trusted",
with a reason code) that ``observe`` records; it never leaves the package.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["CacheError", "CorruptStats"]


class CacheError(WorkerError):
    """An expected failure (bad config, bad request data, corrupt stats); becomes an error frame."""


class CorruptStats(CacheError):
    """The stats file cannot be read as a stats document."""
