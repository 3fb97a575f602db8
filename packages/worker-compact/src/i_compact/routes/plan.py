"""``compact_plan``: choose ``cut`` (or decline with ``reason``) and start the attempt's state."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from i_protocol import Request
from i_protocol.budget import BudgetVerdict
from i_protocol.jsonsafe import replace_surrogates as scrub

from .. import diagnostics as diag
from ..allowance import (
    PREVIOUS_SUMMARY_MAX,
    fit_budget,
    local_max_bytes,
    sections_max_bytes,
    summary_max_tokens,
)
from ..errors import CompactError
from ..failure import count, fail, load_config
from ..history import approx_size, latest_summary
from ..normalize import normalize_summary
from ..settings import CompactConfig, image_mode
from ..state import STATE_SCHEMA, CompactState

SUMMARY_NOT_FINISHED = "summary_not_finished"
"""``previous_attempt.reason``: the model summary of the previous plan did not finish normally."""


@dataclass
class _Plan:
    """What one ``compact_plan`` call works from."""

    history: list[dict[str, Any]]
    config: CompactConfig
    budget: BudgetVerdict | None
    """The ``budget_result`` the core passed on (None: none with a verdict)."""
    forced: bool
    state: CompactState
    estimates: Any
    common: dict[str, Any] = field(default_factory=dict)
    sizes: list[int] = field(default_factory=list)
    fit: Any = None
    """The fit check's budget (capacity, estimates, allowance), when the estimates allow one."""


def compact_plan(data: dict[str, Any], request: Request, worker_line: str) -> dict[str, Any]:
    """Choose ``cut`` (or decline with ``reason``) and return the opaque ``state``."""
    plan = _start(data, request, worker_line)
    out = dict(data)
    out["cut"] = None
    out.pop("detail", None)
    reason = _decline_reason(plan.config, plan.budget, plan.forced) or _unfinished_refusal(plan)
    choice = _choose(plan) if reason is None else None
    choice = _prepared_choice(plan, choice, data.get("prepared"))
    if choice is not None and choice.cut is not None:
        return _planned(out, plan, choice)
    return _declined(out, plan, choice, reason or (choice.reason if choice is not None else None))


def _start(data: dict[str, Any], request: Request, worker_line: str) -> _Plan:
    from ..fit import parse_cut_estimates

    history = data.get("history")
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        fail(request, None, "invalid_request", "history is not a list of messages")
        raise CompactError("compact_plan: data.history must be a list of message objects")
    previous_attempt = _previous_attempt(data.get("previous_attempt"), request)
    config = load_config(request)
    fallback = _fallback(config, previous_attempt)
    if fallback is not None:
        config = replace(config, mode=fallback)
    budget = BudgetVerdict.find(data)
    estimates, problem = parse_cut_estimates(budget.cut_estimates if budget is not None else None)
    forced = data.get("force") is True
    state = CompactState(
        schema=STATE_SCHEMA,
        worker=worker_line,
        attempt=uuid.uuid4().hex,
        forced=forced,
        policy=_policy(config, data),
        previous_summary=_canonical_previous(latest_summary(history)),
        budget=budget.figures() if budget is not None else None,
        previous_attempt=previous_attempt,
        request=_request_budget(budget, estimates),
        fallback=fallback,
    )
    common: dict[str, Any] = {
        "cutEstimates": "invalid: " + problem if problem else ("present" if estimates is not None else None),
        "previousAttempt": previous_attempt,
    }
    if fallback is not None:
        common["fallback"] = "local summary: the model summary did not finish normally (on_unfinished_summary)"
    return _Plan(history, config, budget, forced, state, estimates, common)


def _policy(config: CompactConfig, data: dict[str, Any]) -> dict[str, Any]:
    """What the plan runs under (``state.policy``)."""
    return {
        "enabled": config.enabled,
        "keep_recent": config.keep_recent,
        "images": image_mode(config, data.get("budget"), data.get("model")),
        "mode": config.mode,
        "config": config.source,
    }


def _request_budget(verdict: BudgetVerdict | None, estimates: Any) -> dict[str, Any] | None:
    """A summary request's budget (``state.request``), when the budget result gives one."""
    from ..chunks import RequestBudget

    if verdict is None or not count(verdict.capacity) or not count(verdict.output_reserve):
        return None
    rate = estimates.tokens_per_byte if estimates is not None else None
    budget = RequestBudget(verdict.capacity, verdict.output_reserve, rate or 1.0, verdict.provisional).as_state()
    if rate is None:
        budget["tokens_per_byte_source"] = "default 1 token per byte (no cut_estimates)"
    return budget


def _choose(plan: _Plan) -> Any:
    """The fit check's choice of cut (squeezed once in a small local window)."""
    from ..fit import SUFFIX_OVER_BUDGET, fit_cut
    from ..history import boundaries
    from ..plan import choose_cut

    history, config, verdict = plan.history, plan.config, plan.budget
    plan.sizes = [approx_size(m) for m in history]
    ok = boundaries(history)
    base = choose_cut(history, config.keep_recent, plan.sizes, ok)
    budget = fit_budget(config, verdict, plan.estimates, plan.sizes, history)
    if plan.estimates is not None and budget is None:
        plan.common["cutEstimates"] = "unusable: budget_result has no capacity/output_reserve"
    previous = plan.state.previous_attempt
    # Only a cut that was over budget asks for a later one; an unfinished summary says nothing of it.
    previous_cut = previous["cut"] if previous and previous["reason"] != SUMMARY_NOT_FINISHED else None
    over = verdict is not None and verdict.fits is False

    def fit(budget: Any) -> Any:
        return fit_cut(history, ok, base, config.keep_recent, budget, previous_cut=previous_cut, over_capacity=over)

    plan.fit = budget
    choice = fit(budget)
    if choice.cut is None and choice.reason == SUFFIX_OVER_BUDGET and config.mode == "local":
        # No cut fits with the usual local bound: a small window. Give the summary the room
        # left beside the suffix (never below its floor) and plan again.
        choice = fit(fit_budget(config, verdict, plan.estimates, plan.sizes, history, squeeze=True))
    return choice


def _prepared_choice(plan: _Plan, choice: Any, offer: Any) -> Any:
    """The prepared cut when the core offers one that is usable now (``routes.prepared``)."""
    if offer is None:
        return choice
    from .prepared import prefer_prepared

    return prefer_prepared(plan.history, choice, offer, plan.fit, plan.state.previous_attempt is not None)


def _declined(out: dict[str, Any], plan: _Plan, choice: Any, reason: str | None) -> dict[str, Any]:
    from ..fit import SUFFIX_OVER_BUDGET

    reason = reason or "no_safe_cut"
    detail = choice.detail if choice is not None else None
    record = diag.attempt(
        diag.SKIPPED,
        reason,
        messages=len(plan.history),
        detail=detail,
        fit=choice.info if choice is not None and choice.info else None,
        **plan.common,
    )
    plan.state.last_attempt = record
    plan.state.plan = record
    out.update(state=plan.state.to_json(), reason=reason)
    if reason == SUFFIX_OVER_BUDGET and detail:
        out["detail"] = detail
    return out


def _planned(out: dict[str, Any], plan: _Plan, choice: Any) -> dict[str, Any]:
    cut = choice.cut
    state, sizes, verdict = plan.state, plan.sizes, plan.budget
    state.cut = cut
    state.summary_max_tokens = summary_max_tokens(state, choice, verdict)
    state.sections_max_bytes = sections_max_bytes(state, choice, verdict)
    state.local_max_bytes = local_max_bytes(state, choice)
    state.sizes = {
        "system": sizes[0] if sizes else 0,
        "prefix": sum(sizes[1:cut]),
        "suffix": sum(sizes[cut:]),
    }
    record = diag.attempt(
        diag.PLANNED,
        _planned_reason(choice, plan),
        cut=cut,
        alignment=choice.alignment,
        messagesCompacted=cut - 1,
        messagesRetained=len(plan.history) - cut,
        estimatedInputTokensBefore=verdict.estimate if verdict is not None else None,
        comparableEstimateBefore=verdict.comparable_estimate if verdict is not None else None,
        fit=choice.info or None,
        **plan.common,
    )
    state.last_attempt = record
    state.plan = record
    out.pop("reason", None)
    out.update(cut=cut, state=state.to_json())
    return out


def _planned_reason(choice: Any, plan: _Plan) -> str:
    from ..fit import KEEP_RECENT_REDUCED

    if choice.reason == KEEP_RECENT_REDUCED:
        return KEEP_RECENT_REDUCED
    if plan.forced and not (plan.budget is not None and plan.budget.recommend_compact):
        return "forced"
    return "recommended"


def _previous_attempt(value: Any, request: Request) -> dict[str, Any] | None:
    """``data.previous_attempt`` validated: ``{"cut": int, "reason": str}`` or absent."""
    if value is None:
        return None
    if not isinstance(value, dict) or not count(value.get("cut")) or not isinstance(value.get("reason"), str):
        message = 'compact_plan: data.previous_attempt must be {"cut": <index>, "reason": <string>}'
        fail(request, None, "invalid_request", message)
        raise CompactError(message)
    return {"cut": value["cut"], "reason": scrub(value["reason"])[:200]}


def _fallback(config: CompactConfig, previous_attempt: dict[str, Any] | None) -> str | None:
    """``local`` when the previous model summary did not finish and compact.json says to answer
    with the local summary then (``on_unfinished_summary``)."""
    unfinished = previous_attempt is not None and previous_attempt["reason"] == SUMMARY_NOT_FINISHED
    if not unfinished or config.mode != "model" or config.on_unfinished_summary != "local":
        return None
    return "local"


def _unfinished_refusal(plan: _Plan) -> str | None:
    """``summary_not_finished`` when compact.json says to fail then (``on_unfinished_summary``)."""
    previous = plan.state.previous_attempt
    if previous is None or previous["reason"] != SUMMARY_NOT_FINISHED or plan.config.mode != "model":
        return None
    return SUMMARY_NOT_FINISHED if plan.config.on_unfinished_summary == "fail" else None


def _decline_reason(config: CompactConfig, verdict: BudgetVerdict | None, forced: bool) -> str | None:
    if not config.enabled:
        return "disabled"
    if forced:
        return None
    if verdict is None:
        return "missing_budget_result"
    if not verdict.recommend_compact:
        return "not_recommended"
    return None


def _canonical_previous(text: str | None) -> str | None:
    if text is None:
        return None
    normalized = normalize_summary(text)
    return normalized.summary[:PREVIOUS_SUMMARY_MAX] or None
