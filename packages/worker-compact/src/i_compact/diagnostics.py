"""Attempt diagnostics (seed 002 ``lastAttempt``): statuses, reason codes and the files on disk.

Files, in ``data_dir/workspaces/<id>/compact/`` (several cores may share a workspace, so every
read-modify-write holds ``diagnostics.lock`` and every file is replaced atomically):

- ``last-attempt.json``: the final record of the latest attempt. Written only by the
  ``after_compact_commit`` handler, after the core decided (one of planned / skipped /
  compacted / failed; in practice the last three).
- ``attempts.json``: ``{"schema": 1, "records": [...]}``, the last :data:`HISTORY_MAX` final
  records, oldest first.
- ``failures.json``: the worker's own failures (error frames cannot carry ``state``), the last
  :data:`HISTORY_MAX`; ``after_compact_commit`` takes the one of its attempt back out so that
  the final record keeps the worker's reason instead of ``refused_by_core:worker_failed``.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from i_protocol import ProtocolError, atomic_write_bytes
from i_protocol.errors import FileError
from i_protocol.files import acquire_lock, read_json

if TYPE_CHECKING:
    from i_protocol import Request

PLANNED, SKIPPED, PREPARED, COMPACTED, FAILED = "planned", "skipped", "prepared", "compacted", "failed"
FINAL_STATUSES = (PLANNED, SKIPPED, COMPACTED, FAILED)
HISTORY_MAX = 20
LOCK_TIMEOUT_S = 2.0
READ_LIMIT = 1 << 20
ANONYMOUS_FAILURE_AGE_S = 120
"""A failure recorded without an attempt id (``compact_plan`` failed before it could return a
state) is matched to a ``worker_failed`` commit only while it is at most this old."""
REFUSED_PREFIX = "refused_by_core:"
CORE_CHECKS = (
    "invalid_cut",
    "invalid_candidate",
    "candidate_over_budget",
    "not_reducing",
    "summary_request_over_budget",
    "summary_reply_invalid",
    "model_error",
    "worker_failed",
    "rounds_exceeded",
)
_CHECK = re.compile(r"[a-z0-9_]{1,64}")

REASONS: dict[str, str] = {
    # compact_plan
    "recommended": "planned: the budget recommended compaction and a safe cut that fits exists",
    "forced": "planned: an explicit force:true (the user's /compact) asked for it",
    "keep_recent_reduced": "planned: no cut keeping keep_recent fits; a later cut (never past the newest "
    "real user message) does",
    "disabled": "skipped: compact.json has enabled:false",
    "not_recommended": "skipped: the budget does not recommend compaction (and force is not set)",
    "missing_budget_result": "skipped: no budget_result to follow (a compactor cannot invent one)",
    "history_too_short": "skipped: keep_recent leaves no message before the retained suffix",
    "no_safe_cut": "skipped: no cut point outside tool batches leaves keep_recent messages",
    "nothing_to_compact": "skipped: the only older content is the previous summary",
    "suffix_over_budget": "skipped: no allowed cut, down to the newest real user message, fits the budget",
    "summary_not_finished": "skipped: the model summary did not finish normally and compact.json has "
    "on_unfinished_summary: fail",
    # before_compact
    "model_prompt_prepared": "prepared: prompt + prepared transcript for the core's summary request",
    "model_chunks_prepared": "prepared: the transcript is summarised in several requests (chunks)",
    "local_summary": "prepared: local extractive summary, no model request",
    "summary_cache_hit": "prepared: the same prompt + transcript was summarised before; cached summary reused",
    "prepared_summary_used": "prepared: the core's summary made ahead of the trigger, for this cut and key",
    "summary_from_earlier_hook": "prepared: an earlier hook already supplied a summary; left as is",
    "summary_request_too_small": "failed: a summary request has no room for the transcript",
    # after_compact
    "summary_normalized": "prepared: the summary was normalized to one canonical block; the core decides",
    "empty_summary_preserved_previous": "failed: the new summary is empty; nothing is committed and the "
    "previous summary stays in the session",
    "invalid_summary_contract": "failed: the summary is empty or not a string and there is no previous one",
    # after_compact_commit
    "committed": "compacted: the core committed the candidate",
    # any event
    "invalid_request": "failed: the request data does not have the documented shape",
    "invalid_config": "failed: compact.json or the prompt file is invalid",
}


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def attempt(status: str, reason: str, **fields: Any) -> dict[str, Any]:
    """A ``lastAttempt`` record; ``reason`` must be one of :data:`REASONS`."""
    assert reason in REASONS, reason
    return final_record(status, reason, **fields)


def final_record(status: str, reason: str, **fields: Any) -> dict[str, Any]:
    """A record whose reason may come from elsewhere (the core's check, a plan's decline)."""
    record: dict[str, Any] = {"status": status, "reason": reason, "at": now()}
    record.update({k: v for k, v in fields.items() if v is not None})
    return record


def refused(check: Any) -> str:
    """``refused_by_core:<check>``; a check that is not a plain code becomes ``unknown``."""
    return REFUSED_PREFIX + (check if isinstance(check, str) and _CHECK.fullmatch(check) else "unknown")


def _folder(request: Request) -> Path | None:
    if request.workspace is None and request.frame.get("workspace_id") is None:
        return None
    try:
        return request.state_dir() / "compact"
    except (ProtocolError, OSError, ValueError):
        return None


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        data = read_json(path, READ_LIMIT, what="compaction diagnostics")
    except (OSError, FileError):
        return []
    records = data.get("records") if isinstance(data, dict) else None
    return [r for r in records if isinstance(r, dict)] if isinstance(records, list) else []


def _write_records(path: Path, records: list[dict[str, Any]]) -> None:
    body = orjson.dumps({"schema": 1, "records": records[-HISTORY_MAX:]}, option=orjson.OPT_INDENT_2)
    atomic_write_bytes(path, body, durable=False)


def _best_effort(request: Request, action: Any) -> Any:
    """Run ``action(folder)`` under the lock; diagnostics never turn into a failure."""
    folder = _folder(request)
    if folder is None:
        return None
    try:
        lock = acquire_lock(folder / "diagnostics", timeout=LOCK_TIMEOUT_S)  # folder/diagnostics.lock
    except (ProtocolError, OSError):
        return None
    try:
        return action(folder)
    except (ProtocolError, OSError, TypeError, orjson.JSONEncodeError):
        return None
    finally:
        lock.release()


def persist_final(request: Request, record: dict[str, Any]) -> None:
    """Write ``last-attempt.json`` and append ``record`` to the bounded ``attempts.json``."""

    def write(folder: Path) -> None:
        atomic_write_bytes(folder / "last-attempt.json", orjson.dumps(record, option=orjson.OPT_INDENT_2))
        history = folder / "attempts.json"
        _write_records(history, [*_read_records(history), record])

    _best_effort(request, write)


def record_failure(request: Request, record: dict[str, Any]) -> None:
    """Remember a failure of this worker until ``after_compact_commit`` collects it."""

    def write(folder: Path) -> None:
        path = folder / "failures.json"
        _write_records(path, [*_read_records(path), {**record, "recordedAt": time.time()}])

    _best_effort(request, write)


def take_failure(request: Request, attempt_id: str | None, *, anonymous: bool) -> dict[str, Any] | None:
    """The recorded failure of ``attempt_id`` (removed from ``failures.json``), if any.

    ``anonymous``: without an attempt id, a recent failure without one is taken instead (a
    ``compact_plan`` that failed before it could return a state).
    """

    def take(folder: Path) -> dict[str, Any] | None:
        path = folder / "failures.json"
        records = _read_records(path)
        for position in range(len(records) - 1, -1, -1):
            record = records[position]
            if attempt_id is not None:
                match = record.get("attempt") == attempt_id
            else:
                recorded = record.get("recordedAt")
                age = time.time() - recorded if isinstance(recorded, (int, float)) else -1.0
                match = anonymous and record.get("attempt") is None and 0 <= age <= ANONYMOUS_FAILURE_AGE_S
            if match:
                del records[position]
                _write_records(path, records)
                record.pop("recordedAt", None)
                return record
        return None

    found = _best_effort(request, take)
    return found if isinstance(found, dict) else None
