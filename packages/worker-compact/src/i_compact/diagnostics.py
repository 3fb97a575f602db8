"""Attempt diagnostics (seed 002 ``lastAttempt``): statuses and every reason code."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import orjson

from i_protocol import ProtocolError, atomic_write_bytes

if TYPE_CHECKING:
    from i_protocol import Request

PLANNED, SKIPPED, PREPARED, COMPACTED, FAILED = "planned", "skipped", "prepared", "compacted", "failed"

REASONS: dict[str, str] = {
    # compact_plan
    "recommended": "planned: the budget recommended compaction and a safe cut exists",
    "forced": "planned: an explicit force:true (the user's /compact) asked for it",
    "disabled": "skipped: compact.json has enabled:false",
    "not_recommended": "skipped: the budget does not recommend compaction (and force is not set)",
    "missing_budget_result": "skipped: no budget_result to follow (a compactor cannot invent one)",
    "history_too_short": "skipped: keep_recent leaves no message before the retained suffix",
    "no_safe_cut": "skipped: no cut point outside tool batches leaves keep_recent messages",
    "nothing_to_compact": "skipped: the only older content is the previous summary",
    # before_compact
    "model_prompt_prepared": "prepared: prompt + prepared transcript for the core's summary request",
    "local_summary": "prepared: local extractive summary, no model request",
    "summary_cache_hit": "prepared: the same prompt + transcript was summarised before; cached summary reused",
    "summary_from_earlier_hook": "prepared: an earlier hook already supplied a summary; left as is",
    # after_compact
    "summary_normalized": "compacted: the summary was normalized to one canonical block",
    "empty_summary_preserved_previous": "compacted: the new summary was empty; the previous summary is kept",
    "invalid_summary_contract": "failed: the summary is empty after normalization and there is no previous one",
    "invalid_summary_type": "failed: the summary is not a string",
    "invalid_request": "failed: the request data does not have the documented shape",
    "invalid_config": "failed: compact.json or the prompt file is invalid",
}


def attempt(status: str, reason: str, **fields: Any) -> dict[str, Any]:
    """A ``lastAttempt`` record; ``reason`` must be one of :data:`REASONS`."""
    assert reason in REASONS, reason
    record: dict[str, Any] = {
        "status": status,
        "reason": reason,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def persist(request: Request, record: dict[str, Any]) -> None:
    """Best effort: keep the last attempt in the workspace state folder (failures included)."""
    if request.workspace is None and request.frame.get("workspace_id") is None:
        return
    try:
        path = request.state_dir() / "compact" / "last-attempt.json"
        atomic_write_bytes(path, orjson.dumps(record, option=orjson.OPT_INDENT_2))
    except (ProtocolError, OSError, TypeError):
        return  # diagnostics must never turn a compaction into a failure
