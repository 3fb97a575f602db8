"""The compact worker: ``compact_plan``, ``before_compact`` and ``after_compact`` handlers."""

from __future__ import annotations

import functools
import gc
import uuid
from collections.abc import Callable
from typing import Any, TypeGuard

from i_protocol import Request, Worker, WorkerError
from i_protocol.history import is_summary, text_of

from . import diagnostics as diag
from .__about__ import __version__
from .config import CompactConfig, check_prompt, image_mode, parse_config
from .errors import CompactError
from .history import approx_size, latest_summary
from .normalize import canonical, normalize_summary
from .redact import redact
from .state_record import record_text, strip_records
from .textsafe import scrub, scrub_value

worker = Worker("compact", __version__, dist_name="i-worker-compact")
# Declared in `hello` (SPEC §3.4); set as an attribute so an older i-protocol only ignores it.
worker.extensions = ("after_compact_commit", "after_compact_rounds", "chunks", "cut_estimates", "previous_attempt")

STATE_SCHEMA = 1
DESCRIBE_NOTE = (
    "\n\nThe last {count} image(s) of the compacted messages are attached in transcript order "
    "(the [image #k] markers). Describe in the summary what each shows that matters for the task."
)
PREVIOUS_SUMMARY_MAX = 64000
_BUDGET_FIELDS = (
    "fits",
    "estimate",
    "comparable_estimate",
    "trigger",
    "capacity",
    "output_reserve",
    "recommend_compact",
)
MIN_SUMMARY_TOKENS = 256
"""A model summary is never planned smaller than this (or an eighth of the capacity, if larger)."""
CANONICAL_BYTES = len(canonical(""))
"""The ``<continuation_summary>`` tags around a summary body, in UTF-8 bytes."""


Handler = Callable[[dict[str, Any], Request], dict[str, Any]]


def _acyclic(handler: Handler) -> Handler:
    """Run ``handler`` with the cyclic garbage collector paused.

    Planning and summarising a long history allocate tens of thousands of short-lived,
    acyclic objects; the collector would run dozens of times per request and find nothing
    (about 6% of a 10,000-message local compaction). Reference counting still frees them.
    """

    @functools.wraps(handler)
    def run(data: dict[str, Any], request: Request) -> dict[str, Any]:
        if not gc.isenabled():
            return handler(data, request)
        gc.disable()
        try:
            return handler(data, request)
        finally:
            gc.enable()

    return run


def _config(request: Request, state: dict[str, Any] | None = None) -> CompactConfig:
    try:
        return parse_config(request.config())
    except WorkerError as exc:
        _fail(request, state, "invalid_config", str(exc))
        raise
    except Exception as exc:  # ConfigError from i_protocol (unreadable / invalid JSON)
        _fail(request, state, "invalid_config", str(exc))
        raise CompactError(str(exc)) from None


def _fail(request: Request, state: dict[str, Any] | None, reason: str, message: str) -> None:
    """Record a failure of this worker: in ``state`` and, for ``after_compact_commit``, on disk."""
    attempt_id = state.get("attempt") if isinstance(state, dict) else None
    record = diag.attempt(
        diag.FAILED,
        reason,
        event=request.event,
        error=message,
        attempt=attempt_id if isinstance(attempt_id, str) else None,
    )
    if state is not None:
        state["lastAttempt"] = record
    diag.record_failure(request, record)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


@worker.hook("compact_plan")
@_acyclic
def compact_plan(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Choose ``cut`` (or decline with ``reason``) and return the opaque ``state``."""
    from .chunks import RequestBudget
    from .fit import SUFFIX_OVER_BUDGET, fit_cut, parse_cut_estimates
    from .history import boundaries
    from .plan import choose_cut

    history = data.get("history")
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        _fail(request, None, "invalid_request", "history is not a list of messages")
        raise CompactError("compact_plan: data.history must be a list of message objects")
    previous_attempt = _previous_attempt(data.get("previous_attempt"), request)
    config = _config(request)
    budget_result = data.get("budget_result")
    budget_result = budget_result if isinstance(budget_result, dict) else None
    forced = data.get("force") is True
    previous = latest_summary(history)
    estimates, problem = parse_cut_estimates((budget_result or {}).get("cut_estimates"))
    state: dict[str, Any] = {
        "schema": STATE_SCHEMA,
        "worker": worker.version_line(),
        "attempt": uuid.uuid4().hex,
        "forced": forced,
        "policy": {
            "enabled": config.enabled,
            "keep_recent": config.keep_recent,
            "images": image_mode(config, data.get("budget"), data.get("model")),
            "mode": config.mode,
            "config": config.source,
        },
        "previous_summary": _canonical_previous(previous),
        "budget": {k: budget_result.get(k) for k in _BUDGET_FIELDS} if budget_result else None,
    }
    if previous_attempt is not None:
        state["previous_attempt"] = previous_attempt
    capacity = (budget_result or {}).get("capacity")
    reserve = (budget_result or {}).get("output_reserve")
    if _count(capacity) and _count(reserve):
        rate = estimates.tokens_per_byte if estimates is not None else None
        state["request"] = RequestBudget(capacity, reserve, rate or 1.0).as_state()
        if rate is None:
            state["request"]["tokens_per_byte_source"] = "default 1 token per byte (no cut_estimates)"
    common: dict[str, Any] = {
        "cutEstimates": "invalid: " + problem if problem else ("present" if estimates is not None else None),
        "previousAttempt": previous_attempt,
    }
    out = dict(data)
    out["cut"] = None
    out.pop("detail", None)
    reason = _decline_reason(config, budget_result, forced)
    choice = None
    sizes = [approx_size(m) for m in history]
    if reason is None:
        ok = boundaries(history)
        base = choose_cut(history, config.keep_recent, sizes, ok)
        fit_budget = _fit_budget(config, budget_result, estimates, sizes, history)
        if estimates is not None and fit_budget is None:
            common["cutEstimates"] = "unusable: budget_result has no capacity/output_reserve"
        previous_cut = previous_attempt["cut"] if previous_attempt else None
        over = (budget_result or {}).get("fits") is False
        choice = fit_cut(
            history, ok, base, config.keep_recent, fit_budget, previous_cut=previous_cut, over_capacity=over
        )
        if choice.cut is None and choice.reason == SUFFIX_OVER_BUDGET and config.mode == "local":
            # No cut fits with the usual local bound: a small window. Give the summary the room
            # left beside the suffix (never below its floor) and plan again.
            squeezed = _fit_budget(config, budget_result, estimates, sizes, history, squeeze=True)
            choice = fit_cut(
                history, ok, base, config.keep_recent, squeezed, previous_cut=previous_cut, over_capacity=over
            )
        reason = (choice.reason or "no_safe_cut") if choice.cut is None else None
    if reason is not None or choice is None or choice.cut is None:
        reason = reason or "no_safe_cut"
        detail = choice.detail if choice is not None else None
        record = diag.attempt(
            diag.SKIPPED,
            reason,
            messages=len(history),
            detail=detail,
            fit=choice.info if choice is not None and choice.info else None,
            **common,
        )
        state["lastAttempt"] = record
        state["plan"] = record
        out.update(state=state, reason=reason)
        if reason == SUFFIX_OVER_BUDGET and detail:
            out["detail"] = detail
        return out
    return _planned(out, state, history, sizes, choice, budget_result, forced, common)


def _planned(
    out: dict[str, Any],
    state: dict[str, Any],
    history: list[dict[str, Any]],
    sizes: list[int],
    choice: Any,
    budget_result: dict[str, Any] | None,
    forced: bool,
    common: dict[str, Any],
) -> dict[str, Any]:
    from .fit import KEEP_RECENT_REDUCED

    cut = choice.cut
    state["cut"] = cut
    allowance = _summary_max_tokens(state, choice, budget_result)
    if allowance is not None:
        state["summary_max_tokens"] = allowance
    local_cap = _local_max_bytes(state, choice)
    if local_cap is not None:
        state["local_max_bytes"] = local_cap
    state["sizes"] = {
        "system": sizes[0] if sizes else 0,
        "prefix": sum(sizes[1:cut]),
        "suffix": sum(sizes[cut:]),
    }
    if choice.reason == KEEP_RECENT_REDUCED:
        reason = KEEP_RECENT_REDUCED
    elif forced and not (budget_result or {}).get("recommend_compact"):
        reason = "forced"
    else:
        reason = "recommended"
    record = diag.attempt(
        diag.PLANNED,
        reason,
        cut=cut,
        alignment=choice.alignment,
        messagesCompacted=cut - 1,
        messagesRetained=len(history) - cut,
        estimatedInputTokensBefore=(budget_result or {}).get("estimate"),
        comparableEstimateBefore=(budget_result or {}).get("comparable_estimate"),
        fit=choice.info or None,
        **common,
    )
    state["lastAttempt"] = record
    state["plan"] = record
    out.pop("reason", None)
    out.update(cut=cut, state=state)
    return out


def _local_max_bytes(state: dict[str, Any], choice: Any) -> int | None:
    """The local summary body's byte bound when the plan gave it less room than its usual bound."""
    if (state.get("policy") or {}).get("mode") != "local":
        return None
    planned = (choice.info or {}).get("chosenCandidate") or (choice.info or {}).get("keepRecentCandidate") or {}
    allowance = planned.get("summaryAllowance")
    tokens_per_byte = (choice.info or {}).get("tokensPerByte")
    if not _count(allowance) or not isinstance(tokens_per_byte, int | float) or tokens_per_byte <= 0:
        return None
    return max(LOCAL_FLOOR, int(allowance / tokens_per_byte) - CANONICAL_BYTES)


def _summary_max_tokens(state: dict[str, Any], choice: Any, budget_result: dict[str, Any] | None) -> int | None:
    """The summary reply's cap when the plan gave it less than the full reply reserve (model mode)."""
    if (state.get("policy") or {}).get("mode") != "model" or not isinstance(budget_result, dict):
        return None
    planned = (choice.info or {}).get("chosenCandidate") or (choice.info or {}).get("keepRecentCandidate") or {}
    allowance = planned.get("summaryAllowance")
    reserve = budget_result.get("output_reserve")
    tokens_per_byte = (choice.info or {}).get("tokensPerByte") or 1.0
    if not _count(allowance) or not _count(reserve):
        return None
    cap = allowance - summary_tokens_of_tags(tokens_per_byte)
    return cap if 0 < cap < reserve else None


def summary_tokens_of_tags(tokens_per_byte: float) -> int:
    """Tokens of the canonical ``<continuation_summary>`` tags at ``tokens_per_byte``."""
    from .fit import summary_tokens

    return summary_tokens(CANONICAL_BYTES, tokens_per_byte)


def _previous_attempt(value: Any, request: Request) -> dict[str, Any] | None:
    """``data.previous_attempt`` validated: ``{"cut": int, "reason": str}`` or absent."""
    if value is None:
        return None
    if not isinstance(value, dict) or not _count(value.get("cut")) or not isinstance(value.get("reason"), str):
        message = 'compact_plan: data.previous_attempt must be {"cut": <index>, "reason": <string>}'
        _fail(request, None, "invalid_request", message)
        raise CompactError(message)
    return {"cut": value["cut"], "reason": scrub(value["reason"])[:200]}


def _fit_budget(
    config: CompactConfig,
    budget_result: dict[str, Any] | None,
    estimates: Any,
    sizes: list[int],
    history: list[dict[str, Any]],
    *,
    squeeze: bool = False,
) -> Any:
    """The fit check's budget, or None when the budget result cannot support one (as today)."""
    from .fit import FitBudget, summary_tokens

    if estimates is None or budget_result is None:
        return None
    capacity = budget_result.get("capacity")
    if not _count(capacity):
        return None
    rate = estimates.tokens_per_byte
    if config.mode == "model":
        reserve = budget_result.get("output_reserve")
        if not _count(reserve):
            return None
        tags = summary_tokens(CANONICAL_BYTES, rate)
        floor = min(reserve, max(MIN_SUMMARY_TOKENS, capacity // 8))

        def model_allowance(cut: int) -> int:
            # A model summary is at most its reply's max tokens. In a small window the full reply
            # reserve may not fit beside the suffix: the summary then gets the room that is left
            # (never below the floor), and before_compact caps the summary reply at it.
            suffix = estimates.suffix.get(cut)
            room = capacity - estimates.fixed_tokens - tags - (suffix if suffix is not None else capacity)
            return int(tags + max(floor, min(reserve, room)))

        return FitBudget(capacity, estimates, model_allowance)
    prefix = [0] * (len(sizes) + 1)
    for index in range(1, len(sizes)):
        prefix[index + 1] = prefix[index] + sizes[index]

    carried = carried_record(history[1:2])

    floor = summary_tokens(LOCAL_FLOOR + CANONICAL_BYTES, rate)

    def local_allowance(cut: int) -> int:
        # The local route caps its body at critical_chars UTF-8 bytes (see local_bounds). With
        # ``squeeze`` (no cut fits so: a small window), the summary gets the room left beside the
        # suffix instead (never below the floor), and before_compact bounds the body by it.
        _, critical = bounds_for_prefix(prefix[min(cut, len(sizes))], config.local_max_chars, carried)
        full = summary_tokens(critical + CANONICAL_BYTES, rate)
        suffix = estimates.suffix.get(cut)
        if suffix is None or not squeeze:
            return full
        room = int(capacity) - int(estimates.fixed_tokens) - int(suffix)
        return max(floor, min(full, int(room * SQUEEZE_SHARE)))

    return FitBudget(capacity, estimates, local_allowance)


def _decline_reason(config: CompactConfig, budget_result: dict[str, Any] | None, forced: bool) -> str | None:
    if not config.enabled:
        return "disabled"
    if forced:
        return None
    if budget_result is None:
        return "missing_budget_result"
    if budget_result.get("recommend_compact") is not True:
        return "not_recommended"
    return None


def _canonical_previous(text: str | None) -> str | None:
    if text is None:
        return None
    normalized = normalize_summary(text)
    return normalized.summary[:PREVIOUS_SUMMARY_MAX] or None


@worker.hook("before_compact")
@_acyclic
def before_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Return ``prompt`` + prepared ``messages`` (model mode) or a local ``summary``."""
    from .transcript import analyse, collect_images, prepare

    state = data.get("state")
    state = dict(state) if isinstance(state, dict) else {"schema": STATE_SCHEMA, "worker": worker.version_line()}
    messages = data.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages) or not messages:
        _fail(request, state, "invalid_request", "messages is not a non-empty list of messages")
        raise CompactError("before_compact: data.messages must be a non-empty list of message objects (history[1:cut])")
    config = _config(request, state)
    images = image_mode(config, data.get("budget"), data.get("model"))
    out = dict(data)
    earlier = data.get("summary")
    if isinstance(earlier, str) and earlier.strip():
        state["lastAttempt"] = diag.attempt(diag.PREPARED, "summary_from_earlier_hook", cut=data.get("cut"))
        out["state"] = state
        return out
    out.pop("summary", None)
    if config.mode == "local":
        from .local_summary import local_summary

        analysis = analyse(messages, facts_only=True)
        max_chars, critical_chars = local_bounds(messages, config.local_max_chars, _planned_prefix(state, data))
        cap = state.get("local_max_bytes") if state.get("cut") == data.get("cut") else None
        if _count(cap):  # the room the plan left beside the suffix in a small window
            max_chars, critical_chars = min(max_chars, cap), min(critical_chars, cap)
        body = local_summary(
            messages,
            analysis,
            max_chars=max_chars,
            critical_chars=critical_chars,
            max_bytes=critical_chars,
            images=images,
        )
        state["ledger"] = record_text(body)
        out["summary"] = canonical(body)
        kept = collect_images(messages) if images == "keep" else []
        if kept:
            out["retained_images"] = kept
        state["lastAttempt"] = diag.attempt(
            diag.PREPARED, "local_summary", cut=data.get("cut"), summaryChars=len(out["summary"])
        )
        out["state"] = state
        return out
    return _model_route(out, state, config, images, request, analyse, prepare)


LOCAL_MIN_CHARS = 1000
LOCAL_REDUCTION = 5  # the local summary aims at no more than a fifth of what it replaces
LOCAL_CRITICAL_MAX = PREVIOUS_SUMMARY_MAX
LOCAL_FLOOR = 200
SQUEEZE_SHARE = 0.8
"""Of the room beside the suffix, what a squeezed local summary is planned at: the plan counts it at
the prefix's average density, the core's check at the summary's own (ids and symbols are denser)."""
"""The smallest local bound (bytes): room for a state record with a short request and counts."""


def _planned_prefix(state: dict[str, Any], data: dict[str, Any]) -> int | None:
    """The prefix size ``compact_plan`` measured, when ``state`` belongs to this very cut."""
    sizes = state.get("sizes")
    cut = data.get("cut")
    messages = data.get("messages")
    if not isinstance(sizes, dict) or state.get("cut") != cut or not isinstance(cut, int):
        return None
    prefix = sizes.get("prefix")
    if not isinstance(messages, list) or len(messages) != cut - 1:
        return None
    return prefix if isinstance(prefix, int) and not isinstance(prefix, bool) and prefix >= 0 else None


def local_bounds(messages: list[dict[str, Any]], configured: int, prefix: int | None = None) -> tuple[int, int]:
    """``(max_chars, critical_chars)`` of a local summary.

    ``max_chars`` is ``local_max_chars``, and at most a fifth of the prefix: a summary as large
    as what it replaces cannot reduce the comparable estimate. Pending approvals and ids may
    extend the summary up to a fifth of the prefix (at most 64,000 characters), so the bound
    trims them only when they alone would break the 80% reduction. ``critical_chars`` is also
    the body's bound in UTF-8 bytes, which is what ``compact_plan`` allows for a local summary.
    ``prefix``: the size ``compact_plan`` already measured.
    """
    if prefix is None:
        prefix = sum(approx_size(m) for m in messages)
    return bounds_for_prefix(prefix, configured, carried_record(messages[:1]))


def carried_record(head: list[dict[str, Any]]) -> int:
    """UTF-8 bytes of the state record of the summary at the head of a prefix (0 without one)."""
    if not head or not is_summary(head[0]):
        return 0
    record = record_text(text_of(head[0]))
    return len(record.encode("utf-8", "surrogatepass")) if record is not None else 0


def bounds_for_prefix(prefix: int, configured: int, carried: int = 0) -> tuple[int, int]:
    """:func:`local_bounds` of a prefix of ``prefix`` characters (``approx_size``).

    ``carried``: the bytes of the state record the prefix starts with. It is already as small as
    it gets, so it is carried on top and only the rest of the prefix is held to a fifth: else a
    record growing over generations would be trimmed, a little more each time.
    """
    carried = min(carried, prefix)
    fifth = (prefix - carried) // LOCAL_REDUCTION + carried
    # A prefix under 5,000 characters may take up to half of itself (at most 1,000, at least the
    # floor): a bound larger than the prefix could never reduce it, and the core would refuse.
    small = max(LOCAL_FLOOR, min(LOCAL_MIN_CHARS, prefix // 2))
    max_chars = max(small, min(configured, fifth))
    return max_chars, max(max_chars, min(fifth, LOCAL_CRITICAL_MAX))


def _model_route(
    out: dict[str, Any],
    state: dict[str, Any],
    config: CompactConfig,
    images: str,
    request: Request,
    analyse: Any,
    prepare: Any,
) -> dict[str, Any]:
    from . import summary_cache
    from .prompt import render_prompt, select_prompt

    try:
        template, source = select_prompt(config, out.get("prompt"))
        base_prompt = render_prompt(template, request.workspace or _str(out.get("workspace")))
    except WorkerError as exc:
        _fail(request, state, "invalid_config", str(exc))
        raise
    messages = out["messages"]
    analysis = analyse(messages)
    prepared = prepare(messages, analysis, images)
    state["ledger"] = _model_record(messages, analysis, config)
    prepared_messages = prepared.messages  # built from scrubbed strings only
    summary_images = scrub_value(prepared.summary_images)
    prompt = base_prompt
    try:
        if summary_images:
            prompt = check_prompt(
                prompt + DESCRIBE_NOTE.format(count=len(summary_images)), "the prompt plus image note"
            )
    except WorkerError as exc:
        _fail(request, state, "invalid_config", str(exc))
        raise
    key = summary_cache.cache_key(prompt, prepared_messages, summary_images, out.get("model"))
    state["prompt_source"] = source
    state["transcript"] = prepared.stats
    if config.cache:
        state["cache_key"] = key
        cached = summary_cache.lookup(request.paths.cache_dir, key)
        if cached is not None:
            out["summary"] = cached
            state["cache_hit"] = True
            state["lastAttempt"] = diag.attempt(diag.PREPARED, "summary_cache_hit", cut=out.get("cut"))
            out["state"] = state
            if prepared.retained_images:
                out["retained_images"] = scrub_value(prepared.retained_images)
            return out
    retained_images = scrub_value(prepared.retained_images)
    chunked = _chunked(state, request, base_prompt, prompt, prepared_messages)
    if chunked is not None and len(chunked.chunks) > 1:
        return _chunk_route(out, state, base_prompt, chunked, summary_images, retained_images, images)
    if chunked is not None:
        prepared_messages = chunked.chunks[0]  # one request after shortening a message
    out.pop("chunks", None)
    prompt = _capped_prompt(prompt, state, out)
    out["prompt"] = prompt
    out["messages"] = prepared_messages
    out["summary_images"] = summary_images
    out["retained_images"] = retained_images
    state["lastAttempt"] = diag.attempt(
        diag.PREPARED,
        "model_prompt_prepared",
        cut=out.get("cut"),
        promptChars=len(prompt),
        shortenedMessages=chunked.shortened if chunked is not None and chunked.shortened else None,
    )
    out["state"] = state
    return out


MODEL_RECORD_MAX = 16000
"""UTF-8 bytes of the state record on top of a model summary: at most the local bound (at least
1,000) and this; :func:`record_room` fits it to what the summary reply leaves."""
RECORD_SHARE_OF_REPLY = 3
"""The record may always take a third of the summary reply's allowance on top of it."""


def _model_record(messages: list[dict[str, Any]], analysis: Any, config: CompactConfig) -> str:
    """The prefix's ledger as a record, at its largest; ``after_compact`` fits it to the reply."""
    from .ledger import build
    from .state_record import render

    _, critical = local_bounds(messages, config.local_max_chars, None)
    return render(build(messages, analysis), min(MODEL_RECORD_MAX, max(critical, LOCAL_MIN_CHARS)))


def record_room(state: dict[str, Any], body: str) -> int:
    """Bytes the record may take beside a model summary ``body``: what the plan allowed the
    summary reply and the reply left unused, and never less than a third of that allowance."""
    request = _dict(state.get("request"))
    cap = state.get("summary_max_tokens") if _count(state.get("summary_max_tokens")) else request.get("output_reserve")
    rate = request.get("tokens_per_byte")
    if not _count(cap) or not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
        return MODEL_RECORD_MAX  # nothing known of the window: the record as before_compact made it
    allowed = int(cap / rate)
    left = allowed - len(body.encode("utf-8", "surrogatepass")) - CANONICAL_BYTES
    return min(MODEL_RECORD_MAX, max(LOCAL_FLOOR, allowed // RECORD_SHARE_OF_REPLY, left))


SUMMARY_CAP_NOTE = (
    "\n\nThe context window is small: keep the whole summary under {words} words (it is cut off at "
    "{tokens} tokens, and a cut-off summary is discarded)."
)


def _capped_prompt(prompt: str, state: dict[str, Any], out: dict[str, Any]) -> str:
    """Cap the summary reply (``max_tokens``) when the plan gave the summary less than the reserve."""
    cap = state.get("summary_max_tokens")
    out.pop("max_tokens", None)
    if not _count(cap) or cap == 0:
        return prompt
    out["max_tokens"] = cap
    return prompt + SUMMARY_CAP_NOTE.format(words=max(50, cap * 2 // 3), tokens=cap)


def _chunked(
    state: dict[str, Any], request: Request, base_prompt: str, prompt: str, messages: list[dict[str, Any]]
) -> Any:
    """The transcript split for several summary requests, or None when one request holds it all."""
    from . import chunks

    budget = chunks.request_budget(state.get("request"))
    if budget is None:
        return None  # no capacity known (an old budget worker): one request, as before
    first_tokens, first = chunks.transcript_limit(budget, prompt, summary_so_far=False)
    if chunks.transcript_bytes(messages) <= first:
        return None
    try:
        later_prompt = chunks.update_prompt(base_prompt)
    except WorkerError as exc:
        _fail(request, state, "invalid_config", str(exc))
        raise
    tokens, later = chunks.transcript_limit(budget, later_prompt)
    if later < chunks.MIN_CHUNK_BYTES:
        message = (
            f"before_compact: the transcript needs several summary requests, and one that carries the "
            f"summary so far has room for {max(tokens, 0)} tokens of transcript (capacity {budget.capacity} "
            f"- output_reserve {budget.output_reserve} - prompt - {chunks.FRAME_MARGIN_TOKENS}), less than "
            f"{chunks.MIN_CHUNK_BYTES} bytes. Raise budget.context_window, lower max_tokens, shorten the "
            "prompt, or use mode local (summary_request_too_small)"
        )
        _fail(request, state, "summary_request_too_small", message)
        raise CompactError(message)
    if later > first:
        tokens, later = first_tokens, first
    result = chunks.split(messages, first, later)
    state["chunking"] = {
        "limitTokens": {"first": first_tokens, "later": tokens},
        "limitBytes": {"first": first, "later": later},
        "tokensPerByte": budget.tokens_per_byte,
        "chunks": len(result.chunks),
        "bytes": result.sizes,
        "shortenedMessages": result.shortened,
        "batchesSplit": result.batches_split,
    }
    return result


_DESCRIBE_LABEL = "(attached for description)]"
_KEEP_LABEL = "(kept after compaction)]"


def _chunk_route(
    out: dict[str, Any],
    state: dict[str, Any],
    base_prompt: str,
    split: Any,
    summary_images: list[dict[str, Any]],
    retained_images: list[dict[str, Any]],
    images: str,
) -> dict[str, Any]:
    from .chunks import update_prompt

    later = update_prompt(base_prompt)
    parts = split.chunks
    if images == "describe" and summary_images:
        # Several requests cannot share the images: they stay in the history instead.
        parts = [[_relabel(m) for m in chunk] for chunk in parts]
        retained_images, summary_images = summary_images, []
        state["images_downgraded"] = "describe -> keep (the transcript is summarised in chunks)"
    for key in ("prompt", "messages"):
        out.pop(key, None)
    out["chunks"] = [
        {"prompt": _capped_prompt(base_prompt if index == 0 else later, state, out), "messages": chunk}
        for index, chunk in enumerate(parts)
    ]
    out["summary_images"] = summary_images
    out["retained_images"] = retained_images
    state["lastAttempt"] = diag.attempt(
        diag.PREPARED,
        "model_chunks_prepared",
        cut=out.get("cut"),
        chunks=len(parts),
        chunkLimitTokens=state["chunking"]["limitTokens"]["later"],
        shortenedMessages=split.shortened or None,
    )
    out["state"] = state
    return out


def _relabel(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if message.get("role") == "tool" or not isinstance(content, str) or _DESCRIBE_LABEL not in content:
        return message
    return {**message, "content": content.replace(_DESCRIBE_LABEL, _KEEP_LABEL)}


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@worker.hook("after_compact")
def after_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Normalize ``summary`` to one canonical block, checked against the ledger; an empty or
    non-string one fails.

    With a ledger in ``state`` (this worker's ``before_compact``), a model summary that leaves
    out a ledger fact gets one further request naming what is missing (``request``); what is
    still missing is carried forward, and the state record is appended verbatim. Nothing is
    committed by this step: the core decides and reports it in ``after_compact_commit``.
    """
    state = data.get("state")
    state = dict(state) if isinstance(state, dict) else {"schema": STATE_SCHEMA, "worker": worker.version_line()}
    summary = data.get("summary")
    ledger_text = state.get("ledger") if isinstance(state.get("ledger"), str) else None
    text = scrub(summary) if isinstance(summary, str) else None
    own = text is not None and ledger_text is not None and record_text(text) == ledger_text
    if text is not None and ledger_text is not None:
        # The record is the worker's own: a model may not write one. This worker's own record
        # (the local route) keeps its place, untouched by redaction and normalization.
        text = strip_records(text.replace(ledger_text, _RECORD_SLOT, 1) if own else text)
    normalized = normalize_summary(redact(text)) if text is not None else None
    final = normalized.summary if normalized is not None else ""
    if not final:
        _empty_summary(request, state, summary)
    assert normalized is not None
    round_number = data.get("round")
    check: dict[str, Any] | None = None
    if ledger_text is not None:
        outcome = _checked(normalized.body, ledger_text, own, state, round_number)
        if isinstance(outcome, dict):  # one more request, naming what is missing
            out = {k: v for k, v in data.items() if k != "summary"}
            out["request"] = outcome
            out["state"] = state
            return out
        final, check = outcome
    if state.get("cache_key") and not state.get("cache_hit"):
        _store_cached(request, str(state["cache_key"]), final)
    record = diag.attempt(
        diag.PREPARED,
        "summary_normalized",
        cut=state.get("cut"),
        summaryNormalization=normalized.kind,
        summaryChars=len(final),
        round=round_number if _count(round_number) else None,
        ledgerCheck=check,
        **_estimates_after(state, len(final)),
    )
    state["lastAttempt"] = record
    state["previous_summary"] = final[:PREVIOUS_SUMMARY_MAX]
    out = dict(data)
    out.pop("request", None)
    out["summary"] = final
    out["state"] = state
    return out


_RECORD_SLOT = "\x00i-compact-state-record\x00"


def _empty_summary(request: Request, state: dict[str, Any], summary: Any) -> None:
    """Fail: the summary is empty or not a string (the previous summary is never substituted)."""
    previous = state.get("previous_summary")
    has_previous = isinstance(previous, str) and bool(normalize_summary(previous).summary)
    what = (
        "is empty after normalization"
        if isinstance(summary, str)
        else f"must be a non-empty string, got {type(summary).__name__}"
    )
    if has_previous:
        code = "empty_summary_preserved_previous"
        message = (
            f"after_compact: the summary {what}; nothing is committed and the previous summary stays "
            f"in the session ({code})"
        )
    else:
        code = "invalid_summary_contract"
        message = f"after_compact: the summary {what} and there is no previous summary ({code})"
    _fail(request, state, code, message)
    raise WorkerError(message)


def _checked(
    body: str, ledger_text: str, own: bool, state: dict[str, Any], round_number: Any
) -> dict[str, Any] | tuple[str, dict[str, Any]]:
    """A repair ``request``, or the final summary (carried-forward facts, the record) and the
    check's diagnostics. ``own``: the summary already carries this very record (local route)."""
    from . import summary_check
    from .state_record import parse_record, render

    body = body.replace(_RECORD_SLOT, ledger_text, 1) if own else body
    ledger = parse_record(ledger_text)
    if ledger is None:  # a state that is not ours: commit the summary as it is, unchecked
        return canonical(body), {"status": "unchecked", "reason": "state.ledger is not a valid state record"}
    if own:
        facts = len(summary_check.checked_facts(ledger))
        return canonical(body), {"status": "carried", "facts": facts}
    # The record is fitted to the room the reply leaves; the summary is checked for what it keeps.
    room = record_room(state, body)
    record_block = render(ledger, room)
    ledger = parse_record(record_block) or ledger
    missing = summary_check.missing(body, ledger)
    progress = _dict(state.get("check"))
    first = progress.get("missing") if isinstance(progress.get("missing"), list) else None
    if missing and _count(round_number) and round_number <= summary_check.REPAIR_ROUNDS and first is None:
        repair = summary_check.repair_request(missing)
        if summary_check.fits(repair, body, state.get("request")):
            state["check"] = {"missing": [f"{label}: {text}"[:300] for label, text in missing][:200]}
            state["check"]["missingCount"] = len(missing)
            return repair
    if missing:
        section = summary_check.carried_forward(missing)
        body = f"{body}\n\n{section}"
        # What the section now says need not be said twice within the room: the record gives way.
        record_block = render(ledger, max(LOCAL_FLOOR, room - len(section.encode("utf-8", "surrogatepass")) - 2))
    counted = progress.get("missingCount")
    first_count = counted if first is not None and _count(counted) else len(missing)
    record = {
        "status": "checked",
        "facts": len(summary_check.checked_facts(ledger)),
        "missing": first_count,
        "missingFacts": first[:20] if first is not None else [f"{k}: {v}"[:300] for k, v in missing][:20],
        "repairRequested": first is not None,
        "repairedByModel": (first_count - len(missing)) if first is not None else 0,
        "carriedForward": len(missing),
    }
    record["recordBytes"] = len(record_block.encode("utf-8", "surrogatepass"))
    return canonical(f"{body}\n\n{record_block}"), record


@worker.hook("after_compact_commit")
def after_compact_commit(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Write the attempt's final record (``last-attempt.json`` + history); data comes back as is."""
    diag.persist_final(request, final_attempt(data, request))
    return dict(data)


def final_attempt(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """The final record of an attempt from the core's decision and the worker's last state."""
    state = _dict(data.get("state"))
    last = _dict(state.get("lastAttempt"))
    plan = state.get("plan") if isinstance(state.get("plan"), dict) else None
    attempt_id = _str(state.get("attempt"))
    check = _str(data.get("check"))
    core_reason = _str(data.get("reason"))
    core_reason = scrub(core_reason)[:2000] if core_reason is not None else None
    cut, before, after = (_int(data.get(key)) for key in ("cut", "comparable_before", "comparable_after"))
    common: dict[str, Any] = {
        "attempt": attempt_id,
        "cut": cut,
        "check": check,
        "coreReason": core_reason,
        "comparableEstimateBefore": before,
        "comparableEstimateAfter": after,
        "previousAttempt": state.get("previous_attempt"),
    }
    if data.get("committed") is True:
        summary_fields = {
            key: last.get(key)
            for key in ("summaryNormalization", "summaryChars", "estimatedInputTokensAfter", "round", "ledgerCheck")
            if last.get("reason") == "summary_normalized"
        }
        return diag.final_record(
            diag.COMPACTED,
            "committed",
            savedTokens=before - after if before is not None and after is not None else None,
            plan=plan,
            chunks=_dict(state.get("chunking")).get("chunks"),
            **summary_fields,
            **common,
        )
    if check == "declined":
        reason = core_reason or str(last.get("reason") or "declined")
        return diag.final_record(
            diag.SKIPPED,
            reason[:200],
            detail=last.get("detail") if last.get("status") == diag.SKIPPED else None,
            fit=last.get("fit") if last.get("status") == diag.SKIPPED else None,
            messages=last.get("messages") if last.get("status") == diag.SKIPPED else None,
            **{k: v for k, v in common.items() if k != "coreReason"},
        )
    failure: dict[str, Any] | None = last if last.get("status") == diag.FAILED else None
    taken = diag.take_failure(request, attempt_id, anonymous=check == "worker_failed")
    failure = failure or taken
    if failure is not None:
        reason = str(failure.get("reason") or diag.refused(check))
        error, event = failure.get("error"), failure.get("event")
    else:
        reason, error, event = diag.refused(check), None, None
    return diag.final_record(diag.FAILED, reason, error=error, event=event, plan=plan, **common)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if _count(value) else None


def _store_cached(request: Request, key: str, summary: str) -> None:
    from . import summary_cache

    try:
        summary_cache.store(request.paths.cache_dir, key, summary)
    except OSError:
        pass  # a cache that cannot be written only costs a later re-summarisation


def _estimates_after(state: dict[str, Any], summary_chars: int) -> dict[str, Any]:
    """Estimator-based after/saved figures: the comparable estimate scaled by content size."""
    sizes = state.get("sizes")
    budget = state.get("budget") or {}
    if not isinstance(sizes, dict) or not isinstance(budget, dict):
        return {}
    total = sum(v for v in sizes.values() if isinstance(v, int))
    before = budget.get("comparable_estimate")
    if not total or not isinstance(before, (int, float)) or isinstance(before, bool):
        return {}
    after_chars = int(sizes.get("system", 0)) + summary_chars + 16 + int(sizes.get("suffix", 0))
    after = round(before * after_chars / total)
    return {
        "comparableEstimateBefore": before,
        "estimatedInputTokensAfter": after,
        "estimatedSavedTokens": before - after,
        "estimator": "comparable_estimate x content-size ratio",
    }
