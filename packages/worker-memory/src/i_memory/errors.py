"""The one exception type of i-worker-memory for expected failures."""

from __future__ import annotations

from i_protocol import WorkerError


class MemoryStoreError(WorkerError):
    """An expected failure (bad key/value, limit, credential, corrupt file); becomes an error frame."""
