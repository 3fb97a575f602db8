"""The one exception type of i-worker-cache for expected failures."""

from __future__ import annotations

from i_protocol import WorkerError


class CacheError(WorkerError):
    """An expected failure (bad config, bad request data, corrupt stats); becomes an error frame."""
