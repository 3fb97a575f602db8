"""The next compaction's summary, prepared while the user reads (config.json ``prepare``).

After a console turn ends, ``Preparer.start`` runs the compaction transaction's preparation
(``Compactor.prepare``: ``context_budget``, ``compact_plan``, ``before_compact``, the summary
request(s), ``after_compact``'s checks) on a thread of its own, ``i-compaction-prepare``, once the
next turn is likely to reach the compaction trigger (``due``). Nothing is committed and
nothing is written: the result (``compaction.Prepared``) stays in memory until the trigger offers it
to the compactor (``compact_plan``'s ``prepared``), so a process killed mid-way leaves the session
file exactly as the last turn saved it.

**Which thread calls the workers.** While the console waits at its prompt, only the preparation
thread does. Before the main thread calls a worker again (the user's next line, a command, Ctrl-C,
the exit) it calls ``stop``: the stop flag is set (no further worker call starts), the summary HTTP
request in flight is cancelled at once (its connection is shut down, so a single-slot local server
is free for the user's request; it is never retried), and the thread is joined. The user's turn so
waits at most for the one worker call in flight, and calls to one worker stay sequential (SPEC §3.2).

Prepared only where it can be used: a compactor that declared the ``prepared`` extension (an old
one would never see the result), a budget module, no provider worker (its ``provider_request`` is a
worker call the user would have to wait for), and a history with a possible cut (SPEC §3.5 step 3).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from .budget import Budget, has_cut
from .cancel import Cancelled
from .compaction import PREPARED_EXTENSION, Compactor, Prepared
from .errors import CoreError
from .model import ModelClient

if TYPE_CHECKING:
    from .agent import Agent

PREPARE_SHARE = 0.7
"""Never prepare below this share of the trigger: a session that ends before its trigger should
rarely have paid for a summary."""


def due(estimate: int, trigger: int, previous: int | None) -> bool:
    """Whether to prepare now: at least ``PREPARE_SHARE`` of the trigger, and the next turn, growing
    as much as the last one did (``previous``: the estimate after the turn before), would reach the
    trigger. A summary made two turns early is wasted when the planner's cut moves in between (in
    ``bench/compaction_stall.py`` one in two was); a next turn larger than the last compacts in the
    foreground, as it would without preparation."""
    if estimate < PREPARE_SHARE * trigger:
        return False
    growth = estimate - previous if previous is not None and previous < estimate else 0
    return estimate + growth >= trigger


class Preparer:
    """Prepares the agent's next compaction summary on a background thread (``start`` / ``stop``)."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._client: ModelClient | None = None
        self.estimate: int | None = None
        """The budget's estimate at the last preparation's check (what the next one measures growth by)."""

    def wanted(self) -> bool:
        """Whether a preparation could be used at all in this run."""
        agent = self.agent
        hooks = agent.hooks
        return (
            agent.config.prepare == "auto"
            and agent.model.provider is None
            and hooks.has("context_budget")
            and hooks.has("compact_plan")
            and has_cut(agent.history)
        )

    def start(self) -> None:
        """Begin preparing in the background (after a turn ended; nothing when not ``wanted``)."""
        if self._thread is not None:
            return
        if not self.wanted():
            return
        self._stop = threading.Event()
        self._client = ModelClient(self.agent.config, self.agent.hooks, stream=False, cancellable=True)
        self._thread = threading.Thread(target=self._run, name="i-compaction-prepare", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop now: no further worker call, the summary request cancelled; waits for the one worker
        call in flight. A summary already finished is kept."""
        thread, client = self._thread, self._client
        if thread is None:
            return
        self._stop.set()
        if client is not None:
            client.cancel()
        thread.join()
        self._thread = None
        if client is not None:
            client.close()
            self._client = None

    def _run(self) -> None:
        client = self._client
        assert client is not None
        try:
            prepared = prepare_summary(self.agent, client, self._stop, self)
        except (Cancelled, CoreError, OSError, ValueError):
            return  # nothing is kept; the trigger compacts in the foreground as before
        if prepared is not None and not self._stop.is_set():
            self.agent.keep_prepared(prepared)


def prepare_summary(agent: Agent, client: ModelClient, stop: threading.Event, seen: Preparer) -> Prepared | None:
    """The prepared summary for the agent's history now, or None (not ``due``, the compactor
    declined, or the one held still covers the planner's cut now). ``seen.estimate`` is the previous
    check's estimate, and becomes this one's. Every worker call raises ``Cancelled`` once ``stop`` is
    set."""
    history = list(agent.history)
    hooks = agent.hooks.stopped_by(stop)
    # A copy of the session's metadata: checking a summary request drops the usage anchor (other
    # tools), which must not change the estimate of the user's next request.
    budget = Budget(hooks, agent.config, dict(agent.session.meta))
    # Forced, as the user's /compact is: the budget adds its cut estimates below the trigger too.
    check = budget.check(history, agent.tool_schemas, force=True)
    if check is None:
        return None
    verdict = check.verdict
    trigger = verdict.trigger if verdict.trigger is not None else verdict.raw.get("trigger")
    previous, seen.estimate = seen.estimate, verdict.estimate
    if verdict.estimate is None or not isinstance(trigger, int) or not due(verdict.estimate, trigger, previous):
        return None
    hooks.greet("compact_plan")  # a compactor not started yet is asked hello here, not on the main thread
    if not hooks.declared("compact_plan", PREPARED_EXTENSION):
        return None  # an old compactor would never see the prepared summary
    compactor = Compactor(
        hooks,
        budget,
        client,
        agent.config,
        agent.runtime.workspace,
        agent.tool_schemas,
        agent.session.meta.get("context_state", {}),
        request_meta={**agent.summary_meta(), "prepared": True},
    )
    return compactor.prepare(history, check, agent.prepared)
