"""The exception type of i-worker-budget for expected failures, drawn with the ones it builds on::

    * i_protocol.ProtocolError
      + i_protocol.WorkerError      a handler's expected failure: its message becomes the error frame
        - BudgetError               invalid request data (history, tools, model, rejection) or settings

A ``BudgetError`` reaches the core as an error frame on ``context_budget``: the core names the
event, this worker and the message once, and exits 6. Settings checked by ``i_protocol.settings``
raise its ``SettingsError`` (a ``ConfigError``), which the worker loop turns into an error frame too.
"""

from __future__ import annotations

from i_protocol import WorkerError

__all__ = ["BudgetError"]


class BudgetError(WorkerError):
    """An expected failure of the budget worker; its message is what the user reads."""
