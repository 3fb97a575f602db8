"""The compact module's invariants (SPEC §3.5): a cut that is null or valid and never inside a tool
batch, a non-empty summary, the opaque ``state`` carried through the whole transaction.

The answers are judged by the core's own checkers (``hook_results.CHECKS``) and the candidate by
``i_protocol.history``: the rules a session applies, not a copy of them.
"""

from __future__ import annotations

from typing import Any

from i_protocol.history import HistoryError, is_attachment, summary_marker, validate_history

from ..hook_results import CHECKS, CompactPlan, PreparedSummary
from .probe import CheckFailed, Probe, Run, expect_error
from .samples import budget_output, history, kept_unrelated, with_unrelated

MAX_ROUNDS = 4
"""``after_compact`` may ask for this many summary requests in all (the core's bound)."""
_MODEL_SUMMARY = (
    "Task: fix the failing test in tests/test_parser.py. Done: src/parser.py returns int(s); "
    "pytest passes (1 passed). Constraint: do not touch setup.py. Coverage 91%. Next: nothing pending."
)


def _plan(probe: Probe, messages: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], CompactPlan]:
    sent = with_unrelated(budget_output(messages))
    answer = probe.call("compact_plan", sent)
    plan: CompactPlan = CHECKS["compact_plan"](answer, sent)
    if plan.cut is not None:
        _check_cut(messages, plan.cut)
    return sent, answer, plan


def _check_cut(messages: list[dict[str, Any]], cut: int) -> None:
    """The core's candidate at ``cut`` must be a valid history: no tool batch split by the cut."""
    if is_attachment(messages, cut):
        raise CheckFailed(f"returned cut {cut}, the image attachment of a tool batch (a cut inside the batch)")
    summary = {"role": "user", "content": "<summary>", "_compaction": summary_marker()}
    try:
        validate_history([messages[0], summary, *messages[cut:]])
    except HistoryError as exc:
        raise CheckFailed(f"returned cut {cut}, which splits a tool batch: the candidate is invalid ({exc})") from None


def cut_valid(run: Run) -> str:
    """Histories ending after each kind of turn: every cut is null or valid."""
    full = history()
    cuts = []
    with run.probe() as probe:
        for end in (10, 15, len(full)):
            _, _, plan = _plan(probe, full[:end])
            cuts.append("null" if plan.cut is None else str(plan.cut))
    return f"cuts {', '.join(cuts)} for histories of 10, 15 and {len(full)} messages"


def unrelated_kept(run: Run) -> str:
    """``compact_plan`` returns the complete data: a field it does not own comes back unchanged."""
    with run.probe() as probe:
        _, answer, _ = _plan(probe, history())
    problem = kept_unrelated(answer)
    if problem:
        raise CheckFailed(f"compact_plan: {problem}")
    return "compact_plan kept it"


def transaction(run: Run) -> str:
    """plan → before_compact → summary requests → after_compact → after_compact_commit, with the
    worker's own ``state`` sent back at each step; the final summary is non-empty."""
    messages = history()
    with run.probe() as probe:
        sent, _, plan = _plan(probe, messages)
        if plan.cut is None:
            raise CheckFailed(f"compact_plan declined a forced compaction ({plan.reason}); nothing else can be checked")
        prepare = with_unrelated(
            {
                "messages": messages[1 : plan.cut],
                "cut": plan.cut,
                "state": plan.state,
                "model": sent["model"],
                "budget": sent["budget"],
                "workspace": run.site.workspace,
            }
        )
        answer = probe.call("before_compact", prepare)
        prepared: PreparedSummary = CHECKS["before_compact"](answer, prepare)
        _unrelated("before_compact", answer)
        state, summary, route = prepared.state, prepared.summary, "local summary"
        rounds = 0
        if summary is None:
            route = f"{len(prepared.requests)} summary request(s)"
            summary = _MODEL_SUMMARY
        final: str | None = None
        while final is None:
            rounds += 1
            revise = with_unrelated({"summary": summary, "state": state, "round": rounds})
            answer = probe.call("after_compact", revise)
            revision = CHECKS["after_compact"](answer, revise)
            _unrelated("after_compact", answer)
            state, final = revision.state, revision.summary
            if final is None and rounds >= MAX_ROUNDS:
                raise CheckFailed(f"after_compact asked for more than {MAX_ROUNDS} summary requests")
        commit = with_unrelated(
            {
                "committed": True,
                "reason": "committed",
                "check": None,
                "cut": plan.cut,
                "comparable_before": 7000,
                "comparable_after": 2500,
                "state": state,
            }
        )
        _unrelated("after_compact_commit", probe.call("after_compact_commit", commit))
    return f"cut {plan.cut}, {route}, {rounds} after_compact round(s), summary of {len(final)} characters"


def _unrelated(event: str, answer: dict[str, Any]) -> None:
    problem = kept_unrelated(answer)
    if problem:
        raise CheckFailed(f"{event}: {problem}")


def bad_history(run: Run) -> str:
    """A ``compact_plan`` whose history is not a list is refused with an error frame."""
    data = {**budget_output(history()), "history": "not a list"}
    with run.probe() as probe:
        return expect_error(probe, "compact_plan", data, "history 'not a list'")


CHECKS_OF_MODULE = (
    ("compact_plan: cut null or valid, never inside a tool batch", cut_valid),
    ("compact_plan: unrelated fields kept", unrelated_kept),
    ("compact: state round trip, non-empty summary", transaction),
    ("compact_plan: error frame for a bad history", bad_history),
)
