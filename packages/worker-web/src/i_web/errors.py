"""The exception type of i-worker-web for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - WebError                  a fetch or search that was refused or failed

Not drawn: ``network.DeadlineExceeded`` is an ``httpcore.TimeoutException`` on purpose, so that the
HTTP stack stops the way it stops for its own timeouts; ``fetch`` and ``search`` turn it into a
``WebError`` like every timeout.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["WebError"]


class WebError(WorkerError):
    """A fetch or search that was refused or failed; the message is safe to show the model."""
