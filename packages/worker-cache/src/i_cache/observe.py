"""``request_retry`` and ``after_response``: count extra preparations and observed usage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from . import stats as ledger
from .errors import CacheError
from .usage import UnknownUsage, Usage, read_usage


def cache_meta(data: dict[str, Any], event: str) -> dict[str, Any] | None:
    """``request_meta.cache`` as written by ``before_request``, or None when it was not prepared."""
    meta = data.get("request_meta")
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise CacheError(f"{event}: 'request_meta' must be an object")
    cache = meta.get("cache")
    if cache is None:
        return None
    if not isinstance(cache, dict) or not isinstance(cache.get("request_id"), str):
        raise CacheError(f"{event}: request_meta.cache is not what before_request wrote (no request_id)")
    return cache


def _label(cache: dict[str, Any], key: str) -> str | None:
    value = cache.get(key)
    return value if isinstance(value, str) and value else None


def record_retry(data: dict[str, Any], stats_path: Path) -> dict[str, Any]:
    """Count one more preparation of an already prepared request; the request is not changed."""
    cache = cache_meta(data, "request_retry")
    if cache is None:
        return data
    kind, protocol = _label(cache, "classification"), _label(cache, "protocol")
    with ledger.locked_stats(stats_path) as doc:
        ledger.bump(doc, kind, protocol, "preparations")
        ledger.bump(doc, kind, protocol, "retries")
        record = ledger.find_record(doc, cache["request_id"])
        if record is not None:
            count = record.get("preparations")
            record["preparations"] = (count if isinstance(count, int) and not isinstance(count, bool) else 1) + 1
    return data


def record_response(data: dict[str, Any], stats_path: Path) -> dict[str, Any]:
    """Record the usage of one response per its provider's rules; unknown is never 0."""
    cache = cache_meta(data, "after_response")
    protocol = data.get("protocol")
    if not isinstance(protocol, str) or not protocol:
        protocol = _label(cache, "protocol") if cache is not None else None
    usage: Usage | None
    try:
        usage = read_usage(protocol or "", data.get("response"))
        reason = None
    except UnknownUsage as exc:
        usage, reason = None, exc.reason
    kind = _label(cache, "classification") if cache is not None else None
    with ledger.locked_stats(stats_path) as doc:
        record = ledger.find_record(doc, cache["request_id"]) if cache is not None else None
        if record is not None and record.get("status") == "observed":
            ledger.bump(doc, kind, protocol, "duplicate_responses")
            return data
        ledger.bump(doc, kind, protocol, "observed" if cache is not None else "unprepared_observed")
        if usage is None:
            ledger.bump(doc, kind, protocol, "unknown")
            ledger.bump_reason(doc, kind, protocol, reason or "unknown")
        else:
            ledger.bump(doc, kind, protocol, "known")
            ledger.bump(doc, kind, protocol, "input_tokens", usage.input_tokens)
            ledger.bump(doc, kind, protocol, "cache_read_tokens", usage.cache_read_tokens)
            ledger.bump(doc, kind, protocol, "cache_creation_tokens", usage.cache_creation_tokens)
        _count_summary(doc, data.get("request_meta"), usage)
        if record is not None:
            record["status"] = "observed"
            record["observed_at"] = ledger.now()
            record["usage"] = None if usage is None else usage.as_json()
            record["usage_status"] = "unknown" if usage is None else "known"
            record["unknown_reason"] = reason
    if cache is not None:
        cache["observed"] = {
            "usage_status": "unknown" if usage is None else "known",
            "unknown_reason": reason,
            "usage": None if usage is None else usage.as_json(),
        }
    return data


SUMMARY_SLOTS = ("ahead", "at_trigger")
"""``summaries`` blocks: summary requests made ahead of the trigger (``request_meta.prepared``) or at it."""


def _count_summary(doc: dict[str, Any], meta: Any, usage: Usage | None) -> None:
    """Count a compaction summary request (``request_meta.kind: "summary"``, from i-core) by when it
    was made, with its input tokens, and the sessions they were for (the last 64)."""
    if not isinstance(meta, dict) or meta.get("kind") != "summary":
        return
    slot = "ahead" if meta.get("prepared") is True else "at_trigger"
    summaries = doc.get("summaries")
    if not isinstance(summaries, dict):
        summaries = doc["summaries"] = {}
    block = summaries.get(slot)
    if not isinstance(block, dict):
        block = summaries[slot] = {"requests": 0, "known": 0, "input_tokens": 0, "cache_read_tokens": 0}
    block["requests"] = int(block.get("requests", 0)) + 1
    if usage is not None:
        block["known"] = int(block.get("known", 0)) + 1
        block["input_tokens"] = int(block.get("input_tokens", 0)) + usage.input_tokens
        block["cache_read_tokens"] = int(block.get("cache_read_tokens", 0)) + usage.cache_read_tokens
    session = meta.get("session")
    sessions = summaries.get("sessions")
    if isinstance(session, str) and session:
        known = [s for s in sessions if s != session] if isinstance(sessions, list) else []
        summaries["sessions"] = [*known[-63:], session]
