"""A cut that fits: the budget's ``cut_estimates`` turned into a cut the core will accept.

The budget worker (``budget_result.cut_estimates``) estimates, conservatively, what the suffix
``history[cut:]`` of every user/assistant index costs, what is fixed (system message, tool
schemas, request framing, the summary message's wrapper) and at what rate new text (the summary)
is counted. A candidate at cut ``c`` with a summary of ``S`` UTF-8 bytes is estimated at
``fixed_tokens + ceil(S * tokens_per_byte) + suffix[c]`` and compared with ``capacity``.

``keep_recent`` stays a minimum whenever a candidate that keeps it fits. Only when none does may
the cut move later, down to the newest real user message (seed 002), and the attempt says so
(``keep_recent_reduced``). When not even that fits, the plan declines with
``suffix_over_budget`` and a sentence naming what is too big.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from i_protocol.history import is_summary

from .history import is_real_user
from .plan import CutChoice

KEEP_RECENT_REDUCED = "keep_recent_reduced"
SUFFIX_OVER_BUDGET = "suffix_over_budget"
_UNFITTABLE = ("history_too_short", "no_safe_cut", "nothing_to_compact")


@dataclass(frozen=True)
class CutEstimates:
    """A validated ``budget_result.cut_estimates``."""

    fixed_tokens: int
    tokens_per_byte: float
    suffix: dict[int, int]


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def parse_cut_estimates(value: Any) -> tuple[CutEstimates | None, str | None]:
    """``(estimates, problem)``: ``(None, None)`` when absent, ``(None, why)`` when malformed."""
    if value is None:
        return None, None
    if not isinstance(value, dict):
        return None, "cut_estimates is not an object"
    fixed = value.get("fixed_tokens")
    rate = value.get("tokens_per_byte")
    suffix = value.get("suffix")
    if not _count(fixed):
        return None, "cut_estimates.fixed_tokens is not a non-negative integer"
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not math.isfinite(rate) or not 0 < rate <= 64:
        return None, "cut_estimates.tokens_per_byte is not a number in (0, 64]"
    if not isinstance(suffix, list):
        return None, "cut_estimates.suffix is not a list"
    table: dict[int, int] = {}
    for entry in suffix:
        if not isinstance(entry, list) or len(entry) != 2 or not _count(entry[0]) or not _count(entry[1]):
            return None, "cut_estimates.suffix entries must be [cut, tokens] pairs of non-negative integers"
        table[entry[0]] = entry[1]
    return CutEstimates(fixed, float(rate), table), None


def summary_tokens(summary_bytes: int, tokens_per_byte: float) -> int:
    """What a summary of ``summary_bytes`` UTF-8 bytes is counted at."""
    return math.ceil(summary_bytes * tokens_per_byte)


@dataclass(frozen=True)
class FitBudget:
    """What the fit check needs: capacity, the estimates and the summary allowance per cut."""

    capacity: int
    estimates: CutEstimates
    allowance: Callable[[int], int]
    """Cut -> tokens the summary of ``history[1:cut]`` may take."""

    def candidate(self, cut: int) -> int | None:
        """The candidate estimate at ``cut`` (None when the budget gave no suffix for it)."""
        suffix = self.estimates.suffix.get(cut)
        if suffix is None:
            return None
        return self.estimates.fixed_tokens + self.allowance(cut) + suffix

    def explain(self, cut: int) -> dict[str, Any]:
        """Diagnostics of the candidate at ``cut``."""
        return {
            "cut": cut,
            "suffixTokens": self.estimates.suffix.get(cut),
            "summaryAllowance": self.allowance(cut),
            "candidateTokens": self.candidate(cut),
        }


@dataclass(frozen=True)
class FitChoice:
    """The cut after the fit check, why it moved (if it did), and the figures behind it."""

    cut: int | None
    reason: str
    """``""`` (keep_recent kept), ``keep_recent_reduced``, ``suffix_over_budget`` or a
    :func:`~i_compact.plan.choose_cut` decline."""
    alignment: str | None = None
    detail: str | None = None
    info: dict[str, Any] = field(default_factory=dict)


def newest_real_user(history: list[dict[str, Any]]) -> int | None:
    """Index of the newest real user message (not a summary, not an image attachment)."""
    for index in range(len(history) - 1, 0, -1):
        if history[index].get("role") == "user" and is_real_user(history, index):
            return index
    return None


def fit_cut(
    history: list[dict[str, Any]],
    ok: list[bool],
    base: CutChoice,
    keep_recent: int,
    budget: FitBudget | None,
    *,
    previous_cut: int | None = None,
    over_capacity: bool = False,
) -> FitChoice:
    """Check ``base`` (the keep_recent cut) against the budget and move it later if needed.

    ``previous_cut``: a second plan after the core found the candidate at that cut over budget;
    the cut then moves strictly later (fits by estimate, else the latest allowed cut).
    ``over_capacity``: the history itself does not fit, so a plan that found no keep_recent cut
    (too short, only a summary before it) still looks for a later one that fits.
    """
    n = len(history)
    latest = min(n - keep_recent, n - 1)
    newest_user = newest_real_user(history)
    upper = max(latest, newest_user if newest_user is not None else -1)
    first_new = next((k for k in range(1, n) if not is_summary(history[k])), n)

    def allowed(cut: int) -> bool:
        return 2 <= cut <= upper and cut < n and ok[cut] and cut > first_new

    info: dict[str, Any] = {"keepRecentCut": base.cut}
    if budget is not None:
        info["capacity"] = budget.capacity
        info["fixedTokens"] = budget.estimates.fixed_tokens
        info["tokensPerByte"] = budget.estimates.tokens_per_byte
    if previous_cut is None:
        if budget is None:
            return FitChoice(base.cut, base.reason, base.alignment, info=info)
        if base.cut is not None:
            estimate = budget.candidate(base.cut)
            info["keepRecentCandidate"] = budget.explain(base.cut)
            if estimate is None or estimate <= budget.capacity:
                # No estimate for this cut (a partial table) cannot prove it too big: as today.
                return FitChoice(base.cut, "", base.alignment, info=info)
            start = base.cut
        elif base.reason in _UNFITTABLE and over_capacity:
            start = 1
        else:
            return FitChoice(None, base.reason, info=info)
    else:
        info["previousCut"] = previous_cut
        start = previous_cut
    for cut in range(start + 1, upper + 1):
        if not allowed(cut) or budget is None:
            continue
        estimate = budget.candidate(cut)
        if estimate is not None and estimate <= budget.capacity:
            info["chosenCandidate"] = budget.explain(cut)
            return _chosen(history, cut, latest, info)
    if previous_cut is not None:
        last = next((c for c in range(upper, previous_cut, -1) if allowed(c)), None)
        if last is not None:
            info["fitsByEstimate"] = False
            if budget is not None:
                info["chosenCandidate"] = budget.explain(last)
            return _chosen(history, last, latest, info)
    detail = _detail(history, newest_user, budget, previous_cut, upper if upper >= 2 else None)
    if budget is not None and newest_user is not None and newest_user >= 2:
        info["newestUserCandidate"] = budget.explain(newest_user)
    info["newestUser"] = newest_user
    return FitChoice(None, SUFFIX_OVER_BUDGET, detail=detail, info=info)


def _chosen(history: list[dict[str, Any]], cut: int, latest: int, info: dict[str, Any]) -> FitChoice:
    alignment = "user" if is_real_user(history, cut) else str(history[cut].get("role"))
    return FitChoice(cut, KEEP_RECENT_REDUCED if cut > latest else "", alignment, info=info)


def _detail(
    history: list[dict[str, Any]],
    newest_user: int | None,
    budget: FitBudget | None,
    previous_cut: int | None,
    upper: int | None,
) -> str:
    """One sentence for the user: what is too big, with the numbers."""
    if previous_cut is not None:
        opening = f"No cut later than history[{previous_cut}] fits the context budget"
    else:
        opening = "No cut up to the newest real user message fits the context budget"
    if newest_user is None:
        where = "the history has no real user message to keep"
    elif newest_user < 2:
        where = (
            f"the newest real user message is history[{newest_user}], the first message after the "
            "system message, which every compaction keeps"
        )
    else:
        where = f"the newest real user message is history[{newest_user}]"
    if budget is None:
        return (
            f"{opening}: {where}; the budget worker gave no cut_estimates, so the size of what "
            "must be kept is unknown. Shorten the latest messages or start a new session."
        )
    estimates = budget.estimates
    figures = ""
    shown = newest_user if newest_user is not None and newest_user >= 2 else upper
    if shown is not None and shown in estimates.suffix:
        label = "it" if shown == newest_user else f"history[{shown}] (the latest allowed cut)"
        figures = (
            f"; keeping {label} and everything after it is estimated at {estimates.suffix[shown]} tokens, "
            f"plus {estimates.fixed_tokens} fixed tokens (system message, tool schemas, request framing, "
            f"summary wrapper) and a summary allowance of {budget.allowance(shown)} tokens: "
            f"{budget.candidate(shown)} tokens"
        )
    advice = "Shorten or remove the largest recent message, or start a new session."
    if not figures:
        return (
            f"{opening}: {where}; with {estimates.fixed_tokens} fixed tokens no allowed cut stays within "
            f"the capacity of {budget.capacity} tokens. {advice}"
        )
    return f"{opening}: {where}{figures}, over the capacity of {budget.capacity} tokens. {advice}"
