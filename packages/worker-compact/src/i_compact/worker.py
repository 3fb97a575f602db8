"""The compact worker: ``compact_plan``, ``before_compact`` and ``after_compact`` handlers."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

from i_protocol import Request, Worker, WorkerError

from . import diagnostics as diag
from .__about__ import __version__
from .config import CompactConfig, check_prompt, image_mode, parse_config
from .history import approx_size, latest_summary
from .normalize import canonical, normalize_summary
from .redact import redact
from .textsafe import scrub, scrub_value

worker = Worker("compact", __version__, dist_name="i-worker-compact")

STATE_SCHEMA = 1
DESCRIBE_NOTE = (
    "\n\nThe last {count} image(s) of the compacted messages are attached in transcript order "
    "(the [image #k] markers). Describe in the summary what each shows that matters for the task."
)
PREVIOUS_SUMMARY_MAX = 64000
_BUDGET_FIELDS = ("fits", "estimate", "comparable_estimate", "trigger", "capacity", "recommend_compact")


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
        raise WorkerError(str(exc)) from None


def _fail(request: Request, state: dict[str, Any] | None, reason: str, message: str) -> None:
    record = diag.attempt(diag.FAILED, reason, event=request.event, error=message)
    if state is not None:
        state["lastAttempt"] = record
    diag.persist(request, record)


@worker.hook("compact_plan")
@_acyclic
def compact_plan(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Choose ``cut`` (or decline with ``reason``) and return the opaque ``state``."""
    from .plan import choose_cut

    history = data.get("history")
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        _fail(request, None, "invalid_request", "history is not a list of messages")
        raise WorkerError("compact_plan: data.history must be a list of message objects")
    config = _config(request)
    budget_result = data.get("budget_result")
    budget_result = budget_result if isinstance(budget_result, dict) else None
    forced = data.get("force") is True
    previous = latest_summary(history)
    state: dict[str, Any] = {
        "schema": STATE_SCHEMA,
        "worker": worker.version_line(),
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
    out = dict(data)
    out["cut"] = None
    reason = _decline_reason(config, budget_result, forced)
    choice = None
    sizes = [approx_size(m) for m in history]
    if reason is None:
        choice = choose_cut(history, config.keep_recent, sizes)
        reason = choice.reason or None
    if reason is not None or choice is None or choice.cut is None:
        record = diag.attempt(diag.SKIPPED, reason or "no_safe_cut", messages=len(history))
        state["lastAttempt"] = record
        out.update(state=state, reason=reason or "no_safe_cut")
        return out
    cut = choice.cut
    state["cut"] = cut
    state["sizes"] = {
        "system": sizes[0] if sizes else 0,
        "prefix": sum(sizes[1:cut]),
        "suffix": sum(sizes[cut:]),
    }
    state["lastAttempt"] = diag.attempt(
        diag.PLANNED,
        "forced" if forced and not (budget_result or {}).get("recommend_compact") else "recommended",
        cut=cut,
        alignment=choice.alignment,
        messagesCompacted=cut - 1,
        messagesRetained=len(history) - cut,
        estimatedInputTokensBefore=(budget_result or {}).get("estimate"),
        comparableEstimateBefore=(budget_result or {}).get("comparable_estimate"),
    )
    out.pop("reason", None)
    out.update(cut=cut, state=state)
    return out


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
        raise WorkerError("before_compact: data.messages must be a non-empty list of message objects (history[1:cut])")
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
        body = local_summary(messages, analysis, max_chars=max_chars, critical_chars=critical_chars, images=images)
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
    trims them only when they alone would break the 80% reduction. ``prefix``: the size
    ``compact_plan`` already measured.
    """
    if prefix is None:
        prefix = sum(approx_size(m) for m in messages)
    fifth = prefix // LOCAL_REDUCTION
    max_chars = max(LOCAL_MIN_CHARS, min(configured, fifth))
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
        prompt = render_prompt(template, request.workspace or _str(out.get("workspace")))
    except WorkerError as exc:
        _fail(request, state, "invalid_config", str(exc))
        raise
    messages = out["messages"]
    prepared = prepare(messages, analyse(messages), images)
    prepared_messages = prepared.messages  # built from scrubbed strings only
    summary_images = scrub_value(prepared.summary_images)
    if summary_images:
        prompt = check_prompt(prompt + DESCRIBE_NOTE.format(count=len(summary_images)), "the prompt plus image note")
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
    out["prompt"] = prompt
    out["messages"] = prepared_messages
    out["summary_images"] = summary_images
    out["retained_images"] = scrub_value(prepared.retained_images)
    state["lastAttempt"] = diag.attempt(
        diag.PREPARED, "model_prompt_prepared", cut=out.get("cut"), promptChars=len(prompt)
    )
    out["state"] = state
    return out


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


@worker.hook("after_compact")
def after_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Normalize ``summary`` to one canonical block; keep the previous one when it is empty."""
    state = data.get("state")
    state = dict(state) if isinstance(state, dict) else {"schema": STATE_SCHEMA, "worker": worker.version_line()}
    summary = data.get("summary")
    if not isinstance(summary, str):
        message = f"after_compact: summary must be a string, got {type(summary).__name__} (invalid_summary_type)"
        _fail(request, state, "invalid_summary_type", message)
        raise WorkerError(message)
    normalized = normalize_summary(redact(scrub(summary)))
    final = normalized.summary
    reason = "summary_normalized"
    if not final:
        previous = state.get("previous_summary")
        previous_norm = normalize_summary(previous) if isinstance(previous, str) else None
        if previous_norm is None or not previous_norm.summary:
            message = (
                "after_compact: the summary is empty after normalization and no previous summary "
                "exists to keep (invalid_summary_contract)"
            )
            _fail(request, state, "invalid_summary_contract", message)
            raise WorkerError(message)
        final = previous_norm.summary
        reason = "empty_summary_preserved_previous"
    elif state.get("cache_key") and not state.get("cache_hit"):
        _store_cached(request, str(state["cache_key"]), final)
    record = diag.attempt(
        diag.COMPACTED,
        reason,
        cut=state.get("cut"),
        summaryNormalization=normalized.kind,
        summaryChars=len(final),
        **_estimates_after(state, len(final)),
    )
    state["lastAttempt"] = record
    if reason == "summary_normalized":
        state["previous_summary"] = final[:PREVIOUS_SUMMARY_MAX]
    diag.persist(request, record)
    out = dict(data)
    out["summary"] = final
    out["state"] = state
    return out


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
