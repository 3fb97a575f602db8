"""The estimator: tokens of the next request, its comparable content estimate and what fits.

Everything here is a pure function of the request data and the learned class densities;
the worker adds only the density store's I/O around it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .anchor import Anchor, Fallback, parse_anchor
from .density import BYTES, ZERO, Classes, Rates, add, sub
from .errors import BudgetError
from .measure import HistoryMeasure, measure_history, measure_tools
from .policy import Policy, parse_policy

RESULT_VERSION = 1
REQUEST_OVERHEAD_TOKENS = 16
"""Request framing the byte count cannot see (reply priming, hidden separators)."""
REPLY_OVERHEAD_TOKENS = 8
"""The anchored reply is counted by its output tokens; its message framing is added on top."""
MAX_PENDING_TOOL_CALLS = 10_000
BYTES_PER_CHAR_WORST = 4
"""A UTF-8 character takes at most 4 bytes: ``chars = bytes // 4`` holds for any text."""
SUMMARY_WRAPPER_CLASSES: Classes = (190, 0, 40, 0)
"""The core's untrusted-summary wrapper around a compaction summary (about 230 bytes of prose)."""
PLAUSIBLE_MARGIN_TOKENS = 4096
"""An anchored request may cost this many tokens beyond its bytes (templates, role markers)."""
UNPLANNED_IMAGE_TOKENS = 10_000
"""What an anchored image may have cost when no ``image_tokens`` is planned (for plausibility only)."""


@dataclass(frozen=True, slots=True)
class Observation:
    """Real tokens of a known class mix: what the density store learns from."""

    key: str
    """Deduplication key: the same anchor is presented to several checks but learned once."""
    source: str
    """``increment`` (between two anchored requests), ``request`` (a whole request) or ``rejection``."""
    classes: Classes
    tokens: int


@dataclass(slots=True)
class Outcome:
    """The ``budget_result`` object and the observations this request yielded."""

    result: dict[str, Any]
    observations: list[Observation]


def comparable_estimate(history: list[Any], image_tokens: int | None = None) -> int:
    """Pure content estimate: message wire bytes, images at ``image_tokens`` (else their bytes)."""
    return _comparable(measure_history(history, count_classes=False), image_tokens)


def _comparable(measure: HistoryMeasure, image_tokens: int | None) -> int:
    if image_tokens is None:
        return measure.total_bytes + measure.image_bytes()
    return measure.total_bytes + image_tokens * measure.image_count()


def _request_fields(data: dict[str, Any]) -> tuple[str, int, bool]:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise BudgetError(f"model must be a non-empty string, got {model!r}")
    pending = data.get("pending_tool_calls", 0)
    if pending is None:
        pending = 0
    if isinstance(pending, bool) or not isinstance(pending, int) or not 0 <= pending <= MAX_PENDING_TOOL_CALLS:
        raise BudgetError(
            f"pending_tool_calls must be an integer between 0 and {MAX_PENDING_TOOL_CALLS}, got {pending!r}"
        )
    compact = data.get("compact", False)
    if compact is None:
        compact = False
    if not isinstance(compact, bool):
        raise BudgetError(f"compact must be true or false, got {compact!r}")
    return model, pending, compact


def _match(anchor: Anchor | Fallback, model: str, measure: HistoryMeasure, count: int) -> Anchor | Fallback:
    if isinstance(anchor, Fallback):
        return anchor
    if anchor.model != model:
        return Fallback("model_changed", f"usage is for model {anchor.model!r}, this request is for {model!r}")
    if anchor.prefix_messages > count:
        return Fallback(
            "prefix_changed",
            f"usage covered {anchor.prefix_messages} messages but the history now has {count}",
        )
    if measure.prefix_fingerprint != anchor.prefix_fingerprint:
        return Fallback("prefix_changed", f"the first {anchor.prefix_messages} messages changed since the usage")
    return anchor


def _plausible(
    matched: Anchor | Fallback, measure: HistoryMeasure, tools: Classes, image_tokens: int | None
) -> Anchor | Fallback:
    """The matched anchor, unless its input count is impossible for the prefix it covered.

    A token covers at least one byte: more input tokens than the prefix's bytes, its tool schemas,
    its images and a margin is a corrupt count (one bad reply would otherwise brick the session),
    so it is neither used nor learned from.
    """
    if not isinstance(matched, Anchor):
        return matched
    images = measure.image_count() - measure.image_count(matched.prefix_messages)
    bound = (
        measure.prefix_bytes + sum(tools) + images * (image_tokens or UNPLANNED_IMAGE_TOKENS) + PLAUSIBLE_MARGIN_TOKENS
    )
    if matched.input_tokens <= bound:
        return matched
    return Fallback(
        "usage_implausible",
        f"usage reports {matched.input_tokens} input tokens for {measure.prefix_bytes} bytes of messages and "
        f"{sum(tools)} bytes of tool schemas (at most {bound} is possible); it is not used nor learned from",
    )


def _exact_count(
    data: dict[str, Any], model: str, tools_fp: str, measure: HistoryMeasure, tools: Classes, image_tokens: int | None
) -> tuple[int | None, str | None]:
    """The server's count of this very request (extension ``exact_count``) and, when it is not used, why.

    It must name this request's origin, model and tool schemas, and pass the plausibility check of
    any usage (no more tokens than the request's bytes, its images and a margin).
    """
    raw = data.get("exact_count")
    if raw is None:
        return None, None
    tokens = raw.get("tokens") if isinstance(raw, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 1:
        raise BudgetError(
            f"exact_count must be an object {{tokens, origin, model, tools_fingerprint}} with a positive integer "
            f"tokens, got {raw!r}"
        )
    for key, expected in (("origin", data.get("origin", "")), ("model", model), ("tools_fingerprint", tools_fp)):
        if raw.get(key) != expected:
            return None, f"exact_count is for another {key} ({raw.get(key)!r}, this request: {expected!r}): not used"
    bound = measure.total_bytes + sum(tools) + measure.image_count() * (image_tokens or UNPLANNED_IMAGE_TOKENS)
    if tokens > bound + PLAUSIBLE_MARGIN_TOKENS:
        return None, f"exact_count {tokens} is over what {bound} bytes of request can cost: not used nor learned from"
    return tokens, None


def _cost(rates: Rates, size: int, classes: Classes) -> int:
    """Tokens of uncovered content: exact bytes before anything is learned, else the class rates."""
    return rates.tokens(classes) if rates.learned else size


def _rejection(data: dict[str, Any]) -> tuple[int | None, int | None] | None:
    """``(input_tokens, limit)`` of a provider's "context too long" refusal of this very history."""
    raw = data.get("rejection")
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise BudgetError(f"rejection must be an object {{input_tokens?, limit?}}, got {type(raw).__name__}")
    values: list[int | None] = []
    for key in ("input_tokens", "limit"):
        value = raw.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise BudgetError(f"rejection.{key} must be a positive integer or absent, got {value!r}")
        values.append(value)
    return values[0], values[1]


@dataclass(slots=True)
class _Uncovered:
    """What the anchor does not cover: its class bytes, and the tokens the anchor does cover."""

    start: int
    anchored: int
    size: int
    classes: Classes
    tools_counted: bool
    """The tool schemas are not inside the anchor (no anchor, or other tools than it covered)."""
    tools_classes: Classes
    request_classes: Classes | None
    base: tuple[int, Classes] | None


def _uncovered(
    history: list[Any],
    measure: HistoryMeasure,
    matched: Anchor | Fallback,
    tools: Classes,
    tools_fp: str,
    learn: bool,
    count_classes: bool,
) -> _Uncovered:
    if not isinstance(matched, Anchor):
        # The history was measured split at the (unmatched) anchor's prefix: its classes are both parts.
        classes = add(measure.prefix_classes(), measure.new_classes) if count_classes else ZERO
        whole = add(classes, tools) if learn else None
        return _Uncovered(0, 0, measure.total_bytes, classes, True, tools, whole, None)
    k = start = matched.prefix_messages
    anchored = matched.input_tokens + matched.output_tokens
    size = measure.total_bytes - measure.prefix_bytes
    classes = measure.new_classes
    if k < len(history) and history[k].get("role") == "assistant":
        # The reply to the anchored request: its tokens are the usage's output tokens.
        size -= measure.message_bytes(k)
        classes = sub(classes, measure.message_classes(k))
        start = k + 1
        anchored += REPLY_OVERHEAD_TOKENS
    same_tools = matched.tools_fingerprint == tools_fp
    request: Classes | None = None
    base: tuple[int, Classes] | None = None
    if learn:
        if same_tools and matched.classes is not None:
            request = add(matched.classes, measure.new_classes)
            base = (matched.input_tokens, matched.classes)
        else:
            request = add(add(measure.prefix_classes(), measure.new_classes), tools)
    return _Uncovered(start, anchored, max(0, size), classes, not same_tools, tools, request, base)


def _observations(
    matched: Anchor | Fallback,
    measure: HistoryMeasure,
    tools: Classes,
    tools_fp: str,
    uncovered: _Uncovered,
    rejection: tuple[int | None, int | None] | None,
) -> list[Observation]:
    """What this request teaches: the anchored usage (increment or whole request) and a rejection."""
    found: list[Observation] = []
    if isinstance(matched, Anchor):
        key = matched.prefix_fingerprint[-16:]
        if matched.classes is not None and matched.base is not None:
            tokens, base = matched.base
            found.append(Observation(key, "increment", sub(matched.classes, base), matched.input_tokens - tokens))
        elif matched.classes is not None:
            found.append(Observation(key, "request", matched.classes, matched.input_tokens))
        elif matched.tools_fingerprint == tools_fp:
            whole = add(measure.prefix_classes(), tools)
            found.append(Observation(key, "request", whole, matched.input_tokens))
    if rejection is not None:
        input_tokens, limit = rejection
        # The server counted the whole request; without its count, it was at least one over its limit.
        counted = input_tokens if input_tokens is not None else (limit + 1 if limit is not None else None)
        if counted is not None:
            classes = add(uncovered.classes, uncovered.tools_classes if uncovered.tools_counted else ZERO)
            tokens = counted - uncovered.anchored - REQUEST_OVERHEAD_TOKENS
            found.append(Observation(measure.fingerprint[-16:], "rejection", classes, tokens))
    return found


def _message_costs(measure: HistoryMeasure, rates: Rates, image_cost: int) -> list[int]:
    """Conservative tokens of each message on its own (images at ``image_cost`` each)."""
    costs = []
    for index in range(len(measure.views)):
        images = measure.images.get(index, (0, 0))[0] * image_cost
        if rates.learned:
            costs.append(rates.tokens(measure.message_classes(index)) + images)
        else:
            costs.append(measure.message_bytes(index) + 1 + images)
    return costs


def _cut_hint(history: list[Any], costs: list[int], target: int) -> int | None:
    """Smallest user/assistant index >= 2 whose suffix stays within ``target`` tokens."""
    hint: int | None = None
    suffix = 0
    for index in range(len(history) - 1, 1, -1):
        suffix += costs[index]
        if suffix > target:
            break
        if history[index].get("role") in ("user", "assistant"):
            hint = index
    return hint


def _cut_estimates(
    history: list[Any], costs: list[int], rates: Rates, uncovered: _Uncovered, request: Classes
) -> dict[str, Any]:
    """What a compactor needs to choose a cut that fits: fixed cost, summary rate, suffix per cut."""
    tools_tokens = _cost(rates, sum(uncovered.tools_classes), uncovered.tools_classes)
    wrapper = _cost(rates, sum(SUMMARY_WRAPPER_CLASSES), SUMMARY_WRAPPER_CLASSES)
    suffix: list[list[int]] = []
    running = 0
    for index in range(len(history) - 1, 1, -1):
        running += costs[index]
        if history[index].get("role") in ("user", "assistant"):
            suffix.append([index, running])
    suffix.reverse()
    return {
        "fixed_tokens": costs[0] + tools_tokens + wrapper + REQUEST_OVERHEAD_TOKENS,
        "tokens_per_byte": round(rates.blended(request), 4) if rates.learned else 1.0,
        "suffix": suffix,
    }


def _tool_output_budget(policy: Policy, remaining: int, pending: int, bytes_per_token: float) -> dict[str, Any]:
    per_call_cap = max(1, math.floor(policy.context_window * policy.tool_output_ratio))
    per_call = min(per_call_cap, remaining // max(1, pending))
    per_call_bytes = math.floor(per_call * bytes_per_token)
    return {
        "pending_calls": pending,
        "per_call_tokens": per_call,
        "per_call_bytes": per_call_bytes,
        "per_call_chars": per_call_bytes // BYTES_PER_CHAR_WORST,
        "total_tokens": per_call * pending,
        "per_call_cap_tokens": per_call_cap,
        "bytes_per_token": round(bytes_per_token, 4),
    }


def estimate_budget(
    data: dict[str, Any],
    *,
    policy: Policy | None = None,
    rates: Rates = BYTES,
    learn: Callable[[list[Observation]], Rates] | None = None,
) -> Outcome:
    """Budget the request in ``data`` (the ``context_budget`` event data) into a ``budget_result``.

    ``rates`` are the class densities (default: 1 token per byte). ``learn``, when given,
    receives the observations this request yields (the anchored usage, a rejection) and returns
    the densities to estimate with; the result then carries the class bytes the next anchor needs.
    """
    if policy is None:
        policy = parse_policy(data.get("budget"), data.get("max_tokens"))
    model, pending, compact = _request_fields(data)
    history = data.get("history")
    if not isinstance(history, list):
        raise BudgetError(f"history must be a list of messages, got {type(history).__name__}")
    if not history:
        raise BudgetError("history is empty: a request needs at least the system message")
    rejection = _rejection(data)
    anchor = parse_anchor(data.get("usage"))
    prefix = anchor.prefix_messages if isinstance(anchor, Anchor) and anchor.prefix_messages <= len(history) else None
    count_classes = learn is not None or rates.learned
    measure = measure_history(history, prefix, count_classes=count_classes)
    tools_classes, tools_fp = measure_tools(data.get("tools"))
    matched = _plausible(_match(anchor, model, measure, len(history)), measure, tools_classes, policy.image_tokens)
    uncovered = _uncovered(history, measure, matched, tools_classes, tools_fp, learn is not None, count_classes)
    exact, exact_note = _exact_count(data, model, tools_fp, measure, tools_classes, policy.image_tokens)
    observations: list[Observation] = []
    if learn is not None:
        observations = _observations(matched, measure, tools_classes, tools_fp, uncovered, rejection)
        if exact is not None:  # the server counted the whole request: as good as a usage of it
            whole = add(add(measure.prefix_classes(), measure.new_classes), tools_classes)
            observations.append(Observation(measure.fingerprint[-16:] + tools_fp[-8:], "exact", whole, exact))
        rates = learn(observations)
    tools_tokens = _cost(rates, sum(tools_classes), tools_classes) if uncovered.tools_counted else 0
    image_cost = policy.image_tokens or 0
    new_images = measure.image_count(uncovered.start)
    message_tokens = _cost(rates, uncovered.size, uncovered.classes)
    images_tokens = new_images * image_cost
    estimate = uncovered.anchored + message_tokens + tools_tokens + images_tokens + REQUEST_OVERHEAD_TOKENS
    if exact is not None:  # the server's count covers the whole request (images are planned apart)
        images_tokens = measure.image_count() * image_cost
        estimate = exact + images_tokens
    if rejection is not None and rejection[0] is not None:
        estimate = max(estimate, rejection[0])  # the server's own count of this very request
    unobserved = sum(
        count
        for count, seen in zip(
            add(uncovered.classes, tools_classes if uncovered.tools_counted else ZERO), rates.observations, strict=True
        )
        if not seen
    )
    # An estimate resting mostly on classes never observed is the seed's 1 token per byte: several
    # times the real count. The host may let the server count such a request (see README).
    provisional = rejection is None and exact is None and unobserved > estimate // 10

    reasons: list[str] = []
    if new_images and policy.image_tokens is None:
        reasons.append(
            f"{new_images} image(s) have no planned cost: set budget.image_tokens (earlier usage cannot "
            "predict new images, and an unknown cost is never counted as 0)"
        )
    if estimate > policy.capacity:
        reasons.append(
            f"estimated input {estimate} tokens exceeds the input capacity {policy.capacity} "
            f"(context_window {policy.context_window} - output_reserve {policy.output_reserve} "
            f"- safety margin {policy.safety_margin})"
        )
    fits = not reasons
    over_trigger = estimate >= policy.trigger
    forced = data.get("force") is True
    recommend = compact and (over_trigger or estimate > policy.capacity or rejection is not None)
    remaining = max(0, policy.capacity - estimate)
    request = uncovered.request_classes or add(measure.new_classes, tools_classes)
    bytes_per_token = 1 / rates.blended(request) if rates.learned else 1.0
    costs = _message_costs(measure, rates, image_cost) if compact and (recommend or forced) else None
    notes = list(policy.notes)
    if exact_note is not None:
        notes.append(exact_note)
    if rejection is not None and rejection[1] is not None and rejection[1] < policy.context_window:
        notes.append(
            f"the server's context limit is {rejection[1]} tokens, below budget.context_window "
            f"{policy.context_window}: set budget.context_window to {rejection[1]}"
        )

    result: dict[str, Any] = {
        "version": RESULT_VERSION,
        "fits": fits,
        "estimate": estimate,
        "provisional": provisional,
        "estimate_method": "exact_count"
        if exact is not None
        else "usage_anchor"
        if isinstance(matched, Anchor)
        else ("density" if rates.learned else "utf8_bytes"),
        "fallback_reason": None if isinstance(matched, Anchor) else matched.reason,
        "fallback_detail": None if isinstance(matched, Anchor) else matched.detail,
        "bytes_per_token": round(bytes_per_token, 4),
        "breakdown": {
            "anchored_tokens": uncovered.anchored,
            "message_tokens": message_tokens,
            "tool_schema_tokens": tools_tokens,
            "image_tokens": images_tokens,
            "overhead_tokens": REQUEST_OVERHEAD_TOKENS,
            "exact_tokens": exact,
            "messages": len(history),
            "estimated_messages": len(history) - uncovered.start,
        },
        "comparable_estimate": _comparable(measure, policy.image_tokens),
        "context_window": policy.context_window,
        "output_reserve": policy.output_reserve,
        "safety_margin": policy.safety_margin,
        "capacity": policy.capacity,
        "trigger": policy.trigger,
        "trigger_source": policy.trigger_source,
        "remaining": remaining,
        "over_trigger": over_trigger,
        "recommend_compact": recommend,
        "recommended_cut_hint": _cut_hint(history, costs, policy.trigger // 2) if costs and recommend else None,
        "tool_output_budget": _tool_output_budget(policy, remaining, pending, bytes_per_token),
        "images": {
            "count": measure.image_count(),
            "estimated": new_images,
            "unplanned": new_images if policy.image_tokens is None else 0,
            "image_tokens": policy.image_tokens,
        },
        "reasons": reasons,
        "notes": notes,
        "anchor": _template(model, history, measure, tools_fp, uncovered),
    }
    if costs is not None:
        result["cut_estimates"] = _cut_estimates(history, costs, rates, uncovered, request)
    return Outcome(result, observations)


def _template(
    model: str, history: list[Any], measure: HistoryMeasure, tools_fp: str, uncovered: _Uncovered
) -> dict[str, Any]:
    """The anchor the core stores with this request's usage; class bytes make the next increment."""
    template: dict[str, Any] = {
        "model": model,
        "prefix_messages": len(history),
        "prefix_fingerprint": measure.fingerprint,
        "tools_fingerprint": tools_fp,
    }
    if uncovered.request_classes is not None:
        template["classes"] = list(uncovered.request_classes)
        if uncovered.base is not None:
            template["base"] = {"input_tokens": uncovered.base[0], "classes": list(uncovered.base[1])}
    return template


def budget_result(data: dict[str, Any]) -> dict[str, Any]:
    """The ``budget_result`` of the byte estimator for ``data`` (nothing learned, no I/O)."""
    return estimate_budget(data).result
