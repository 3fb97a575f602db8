"""The estimator: tokens of the next request, its comparable content estimate and what fits.

Everything here is a pure function of the request data (plus an optional learned
bytes-per-token ratio); the worker adds only calibration I/O around it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from i_protocol import WorkerError

from .anchor import Anchor, Fallback, parse_anchor
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


@dataclass(frozen=True, slots=True)
class Observation:
    """Real input tokens of a known byte size: one sample for the calibrated estimator."""

    model: str
    fingerprint: str
    ascii_bytes: int
    nonascii_bytes: int
    input_tokens: int


@dataclass(slots=True)
class Outcome:
    """The ``budget_result`` object and the calibration sample this request yielded, if any."""

    result: dict[str, Any]
    observation: Observation | None


def _tokens(size: int, nonascii: int, bytes_per_token: float) -> int:
    """Bytes to tokens: the learned ratio applies to ASCII bytes only, other bytes stay 1 token each."""
    if bytes_per_token == 1.0:
        return size
    return math.ceil((size - nonascii) / bytes_per_token) + nonascii


def comparable_estimate(history: list[Any], image_tokens: int | None = None) -> int:
    """Pure content estimate: message wire bytes, images at ``image_tokens`` (else their bytes)."""
    return _comparable(measure_history(history, count_nonascii=False), image_tokens)


def _comparable(measure: HistoryMeasure, image_tokens: int | None) -> int:
    if image_tokens is None:
        return measure.total_bytes + measure.image_bytes()
    return measure.total_bytes + image_tokens * measure.image_count()


def _request_fields(data: dict[str, Any]) -> tuple[str, int, bool]:
    model = data.get("model")
    if not isinstance(model, str) or not model:
        raise WorkerError(f"model must be a non-empty string, got {model!r}")
    pending = data.get("pending_tool_calls", 0)
    if pending is None:
        pending = 0
    if isinstance(pending, bool) or not isinstance(pending, int) or not 0 <= pending <= MAX_PENDING_TOOL_CALLS:
        raise WorkerError(
            f"pending_tool_calls must be an integer between 0 and {MAX_PENDING_TOOL_CALLS}, got {pending!r}"
        )
    compact = data.get("compact", False)
    if compact is None:
        compact = False
    if not isinstance(compact, bool):
        raise WorkerError(f"compact must be true or false, got {compact!r}")
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


def _cut_hint(history: list[Any], measure: HistoryMeasure, image_cost: int, target: int, bpt: float) -> int | None:
    """Smallest user/assistant index >= 2 whose suffix stays within ``target`` tokens."""
    hint: int | None = None
    suffix_bytes = suffix_nonascii = suffix_images = 0
    for index in range(len(history) - 1, 1, -1):
        size, nonascii = measure.message_bytes(index, count_nonascii=bpt != 1.0)
        suffix_bytes += size
        suffix_nonascii += nonascii
        suffix_images += measure.images.get(index, (0, 0))[0]
        if _tokens(suffix_bytes, suffix_nonascii, bpt) + suffix_images * image_cost > target:
            break
        if history[index].get("role") in ("user", "assistant"):
            hint = index
    return hint


def _tool_output_budget(policy: Policy, remaining: int, pending: int, bpt: float) -> dict[str, Any]:
    per_call_cap = max(1, math.floor(policy.context_window * policy.tool_output_ratio))
    per_call = min(per_call_cap, remaining // max(1, pending))
    per_call_bytes = math.floor(per_call * bpt)
    return {
        "pending_calls": pending,
        "per_call_tokens": per_call,
        "per_call_bytes": per_call_bytes,
        "per_call_chars": per_call_bytes // BYTES_PER_CHAR_WORST,
        "total_tokens": per_call * pending,
        "per_call_cap_tokens": per_call_cap,
    }


def estimate_budget(
    data: dict[str, Any],
    *,
    policy: Policy | None = None,
    bytes_per_token: float = 1.0,
    observe: bool = False,
) -> Outcome:
    """Budget the request in ``data`` (the ``context_budget`` event data) into a ``budget_result``.

    ``bytes_per_token`` is the calibrated ratio (1.0: plain UTF-8 bytes); ``observe`` asks for
    the calibration sample a matching usage anchor yields.
    """
    if policy is None:
        policy = parse_policy(data.get("budget"), data.get("max_tokens"))
    model, pending, compact = _request_fields(data)
    history = data.get("history")
    if not isinstance(history, list):
        raise WorkerError(f"history must be a list of messages, got {type(history).__name__}")
    if not history:
        raise WorkerError("history is empty: a request needs at least the system message")
    anchor = parse_anchor(data.get("usage"))
    prefix = anchor.prefix_messages if isinstance(anchor, Anchor) and anchor.prefix_messages <= len(history) else None
    measure = measure_history(history, prefix, count_nonascii=observe or bytes_per_token != 1.0)
    tools_bytes, tools_nonascii, tools_fp = measure_tools(data.get("tools"))
    matched = _match(anchor, model, measure, len(history))
    # With a matching anchor only the new messages are estimated, and they are counted as plain
    # bytes: a learned ratio is an average, and one new tool result can be denser than any
    # average seen (bench/budget_calibration.py measured under-counts when it was applied here).
    bpt = 1.0 if isinstance(matched, Anchor) else bytes_per_token
    image_cost = policy.image_tokens or 0

    observation: Observation | None = None
    new_bytes = measure.total_bytes - measure.prefix_bytes
    new_nonascii = measure.total_nonascii - measure.prefix_nonascii
    if isinstance(matched, Anchor):
        k = start = matched.prefix_messages
        anchored = matched.input_tokens + matched.output_tokens
        if k < len(history) and history[k].get("role") == "assistant":
            # The reply to the anchored request: its tokens are the usage's output tokens.
            reply_bytes, reply_nonascii = measure.message_bytes(k)
            new_bytes -= reply_bytes
            new_nonascii -= reply_nonascii
            start = k + 1
            anchored += REPLY_OVERHEAD_TOKENS
        same_tools = matched.tools_fingerprint == tools_fp
        tools_tokens = 0 if same_tools else _tokens(tools_bytes, tools_nonascii, bpt)
        if observe and same_tools and not any(index < k for index in measure.images):
            nonascii = measure.prefix_nonascii + tools_nonascii
            ascii_bytes = measure.prefix_bytes + tools_bytes - nonascii
            observation = Observation(model, matched.prefix_fingerprint, ascii_bytes, nonascii, matched.input_tokens)
        method = "usage_anchor"
        fallback: Fallback | None = None
    else:
        start, anchored = 0, 0
        new_bytes, new_nonascii = measure.total_bytes, measure.total_nonascii
        tools_tokens = _tokens(tools_bytes, tools_nonascii, bpt)
        method = "utf8_bytes" if bpt == 1.0 else "calibrated"
        fallback = matched

    new_images = measure.image_count(start)
    message_tokens = _tokens(max(0, new_bytes), max(0, new_nonascii), bpt)
    images_tokens = new_images * image_cost
    estimate = anchored + message_tokens + tools_tokens + images_tokens + REQUEST_OVERHEAD_TOKENS

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
    recommend = compact and (over_trigger or estimate > policy.capacity)
    hint = _cut_hint(history, measure, image_cost, policy.trigger // 2, bpt) if recommend else None
    remaining = max(0, policy.capacity - estimate)

    result: dict[str, Any] = {
        "version": RESULT_VERSION,
        "fits": fits,
        "estimate": estimate,
        "estimate_method": method,
        "fallback_reason": None if fallback is None else fallback.reason,
        "fallback_detail": None if fallback is None else fallback.detail,
        "bytes_per_token": bpt,
        "breakdown": {
            "anchored_tokens": anchored,
            "message_tokens": message_tokens,
            "tool_schema_tokens": tools_tokens,
            "image_tokens": images_tokens,
            "overhead_tokens": REQUEST_OVERHEAD_TOKENS,
            "messages": len(history),
            "estimated_messages": len(history) - start,
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
        "recommended_cut_hint": hint,
        "tool_output_budget": _tool_output_budget(policy, remaining, pending, bpt),
        "images": {
            "count": measure.image_count(),
            "estimated": new_images,
            "unplanned": new_images if policy.image_tokens is None else 0,
            "image_tokens": policy.image_tokens,
        },
        "reasons": reasons,
        "notes": list(policy.notes),
        "anchor": {
            "model": model,
            "prefix_messages": len(history),
            "prefix_fingerprint": measure.fingerprint,
            "tools_fingerprint": tools_fp,
        },
    }
    return Outcome(result, observation)


def budget_result(data: dict[str, Any]) -> dict[str, Any]:
    """The ``budget_result`` of the plain estimator for ``data`` (no calibration, no I/O)."""
    return estimate_budget(data).result
