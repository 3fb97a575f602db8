"""The one exception type of i-worker-web for expected failures."""

from __future__ import annotations

from i_protocol import WorkerError


class WebError(WorkerError):
    """A fetch or search that was refused or failed; the message is safe to show the model."""
