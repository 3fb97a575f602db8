"""``after_compact``: the summary normalized and checked against the ledger (or a repair request)."""

from __future__ import annotations

from typing import Any

from i_protocol import Request, WorkerError
from i_protocol.history import utf8_len
from i_protocol.jsonsafe import replace_surrogates as scrub

from .. import diagnostics as diag
from ..allowance import LOCAL_FLOOR, PREVIOUS_SUMMARY_MAX, record_room
from ..failure import count, fail
from ..normalize import canonical, normalize_summary
from ..redact import redact
from ..state import CompactState
from ..state_record import record_text, strip_records

_RECORD_SLOT = "\x00i-compact-state-record\x00"


def after_compact(data: dict[str, Any], request: Request, worker_line: str) -> dict[str, Any]:
    """Normalize ``summary`` to one canonical block (see the handler in ``worker``)."""
    state = CompactState.from_json(data.get("state"), worker_line)
    summary = data.get("summary")
    ledger_text = state.ledger
    text = scrub(summary) if isinstance(summary, str) else None
    own = text is not None and ledger_text is not None and record_text(text) == ledger_text
    if text is not None and ledger_text is not None:
        # The record is the worker's own: a model may not write one. This worker's own record
        # (the local route) keeps its place, untouched by redaction and normalization.
        text = strip_records(text.replace(ledger_text, _RECORD_SLOT, 1) if own else text)
    normalized = normalize_summary(redact(text)) if text is not None else None
    final = normalized.summary if normalized is not None else ""
    if normalized is None or not final:
        _empty_summary(request, state, summary)
    assert normalized is not None
    round_number = data.get("round")
    check: dict[str, Any] | None = None
    sections = state.sections if not own else None
    if ledger_text is not None:
        outcome = _checked(normalized.body, ledger_text, own, state, round_number, sections)
        if isinstance(outcome, dict):  # one more request, naming what is missing
            out = {k: v for k, v in data.items() if k != "summary"}
            out["request"] = outcome
            out["state"] = state.to_json()
            return out
        final, check = outcome
    elif sections:
        final = canonical(f"{normalized.body}\n\n{sections}")
    if state.cache_key and not state.cache_hit:
        _store_cached(request, state.cache_key, final)
    state.last_attempt = diag.attempt(
        diag.PREPARED,
        "summary_normalized",
        cut=state.cut,
        summaryNormalization=normalized.kind,
        summaryChars=len(final),
        round=round_number if count(round_number) else None,
        ledgerCheck=check,
        **_estimates_after(state, len(final)),
    )
    state.previous_summary = final[:PREVIOUS_SUMMARY_MAX]
    out = dict(data)
    out.pop("request", None)
    out["summary"] = final
    out["state"] = state.to_json()
    return out


def _empty_summary(request: Request, state: CompactState, summary: Any) -> None:
    """Fail: the summary is empty or not a string (the previous summary is never substituted)."""
    previous = state.previous_summary
    has_previous = previous is not None and bool(normalize_summary(previous).summary)
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
    fail(request, state, code, message)
    raise WorkerError(message)


def _checked(
    body: str, ledger_text: str, own: bool, state: CompactState, round_number: Any, sections: str | None = None
) -> dict[str, Any] | tuple[str, dict[str, Any]]:
    """A repair ``request``, or the final summary (carried-forward facts, the record) and the
    check's diagnostics. ``own``: the summary already carries this very record (local route)."""
    from .. import summary_check
    from ..state_record import parse_record, render, statement_lines

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
    reply = body = _neutral(body) if sections else body
    # The worker's own sections come after the reply (and what it carries forward): what they
    # keep need not be repaired (issue 30).
    # The record's task statement (the sections' until version 2) counts with them.
    statement = "\n".join(statement_lines(ledger.statement))
    missing = summary_check.missing(f"{body}\n\n{sections}\n{statement}" if sections else body, ledger)
    progress = state.check or {}
    first = progress.get("missing") if isinstance(progress.get("missing"), list) else None
    if missing and count(round_number) and round_number <= summary_check.REPAIR_ROUNDS and first is None:
        repair = summary_check.repair_request(missing)
        if summary_check.fits(repair, reply, state.request):
            state.check = {"missing": [f"{label}: {text}"[:300] for label, text in missing][:200]}
            state.check["missingCount"] = len(missing)
            return repair
    if missing:
        section = summary_check.carried_forward(missing)
        body = f"{body}\n\n{section}"
        # What the section now says need not be said twice within the room: the record gives way.
        record_block = render(ledger, max(LOCAL_FLOOR, room - utf8_len(section) - 2))
    counted = progress.get("missingCount")
    first_count = counted if first is not None and count(counted) else len(missing)
    record = {
        "status": "checked",
        "facts": len(summary_check.checked_facts(ledger)),
        "missing": first_count,
        "missingFacts": first[:20] if first is not None else [f"{k}: {v}"[:300] for k, v in missing][:20],
        "repairRequested": first is not None,
        "repairedByModel": (first_count - len(missing)) if first is not None else 0,
        "carriedForward": len(missing),
    }
    record["recordBytes"] = utf8_len(record_block)
    if sections:
        body = f"{body}\n\n{sections}"
    return canonical(f"{body}\n\n{record_block}"), record


def _neutral(body: str) -> str:
    """A model's text cannot open a verbatim request block or an action log of its own."""
    return body.replace("user_request", "user-request").replace("## Action log", "## Action-log")


def _store_cached(request: Request, key: str, summary: str) -> None:
    from .. import summary_cache

    try:
        summary_cache.store(request.paths.cache_dir, key, summary)
    except OSError:
        pass  # a cache that cannot be written only costs a later re-summarisation


def _estimates_after(state: CompactState, summary_chars: int) -> dict[str, Any]:
    """Estimator-based after/saved figures: the comparable estimate scaled by content size."""
    sizes = state.sizes
    budget = state.budget or {}
    if sizes is None:
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
