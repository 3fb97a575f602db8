"""``after_compact_commit``: the attempt's final record from the core's decision and the last state."""

from __future__ import annotations

from typing import Any

from i_protocol import Request
from i_protocol.jsonsafe import replace_surrogates as scrub

from .. import diagnostics as diag
from ..failure import count
from ..state import CompactState

_SUMMARY_FIELDS = ("summaryNormalization", "summaryChars", "estimatedInputTokensAfter", "round", "ledgerCheck")


def final_attempt(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """The final record of an attempt from the core's decision and the worker's last state."""
    state = CompactState.from_json(data.get("state"), "")
    last = state.last_attempt or {}
    check = _str(data.get("check"))
    core_reason = _str(data.get("reason"))
    core_reason = scrub(core_reason)[:2000] if core_reason is not None else None
    cut, before, after = (_int(data.get(key)) for key in ("cut", "comparable_before", "comparable_after"))
    common: dict[str, Any] = {
        "attempt": state.attempt,
        "cut": cut,
        "check": check,
        "coreReason": core_reason,
        "comparableEstimateBefore": before,
        "comparableEstimateAfter": after,
        "previousAttempt": state.previous_attempt,
    }
    if data.get("committed") is True:
        summary_fields = {key: last.get(key) for key in _SUMMARY_FIELDS if last.get("reason") == "summary_normalized"}
        return diag.final_record(
            diag.COMPACTED,
            "committed",
            savedTokens=before - after if before is not None and after is not None else None,
            plan=state.plan,
            chunks=(state.chunking or {}).get("chunks"),
            **summary_fields,
            **common,
        )
    if check == "declined":
        return _declined(last, core_reason, common)
    return _failed(request, state, last, check, common)


def _declined(last: dict[str, Any], core_reason: str | None, common: dict[str, Any]) -> dict[str, Any]:
    reason = core_reason or str(last.get("reason") or "declined")
    skipped = last.get("status") == diag.SKIPPED
    return diag.final_record(
        diag.SKIPPED,
        reason[:200],
        detail=last.get("detail") if skipped else None,
        fit=last.get("fit") if skipped else None,
        messages=last.get("messages") if skipped else None,
        **{k: v for k, v in common.items() if k != "coreReason"},
    )


def _failed(
    request: Request, state: CompactState, last: dict[str, Any], check: str | None, common: dict[str, Any]
) -> dict[str, Any]:
    failure: dict[str, Any] | None = last if last.get("status") == diag.FAILED else None
    taken = diag.take_failure(request, state.attempt, anonymous=check == "worker_failed")
    failure = failure or taken
    if failure is not None:
        reason = str(failure.get("reason") or diag.refused(check))
        error, event = failure.get("error"), failure.get("event")
    else:
        reason, error, event = diag.refused(check), None, None
    return diag.final_record(diag.FAILED, reason, error=error, event=event, plan=state.plan, **common)


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if count(value) else None
