"""``before_compact``'s local route: the summary written here, with its state record."""

from __future__ import annotations

from typing import Any

from .. import diagnostics as diag
from ..allowance import local_bounds, planned_prefix, statement_room
from ..failure import count
from ..history import approx_size
from ..normalize import canonical
from ..settings import CompactConfig
from ..state import CompactState
from ..state_record import record_text

FOCUS_LINE = "Focus the user asked this compaction to keep (/compact): {focus}\n\n"


def local_route(
    out: dict[str, Any], state: CompactState, config: CompactConfig, images: str, focus: str | None = None
) -> dict[str, Any]:
    """``out`` with the local ``summary`` (and the images it keeps) and the updated state. An
    extractive summary cannot weigh its content by a focus: ``focus`` is kept verbatim at its top, so
    the model that reads the summary knows what the user wants kept in view."""
    from ..local_summary import local_summary
    from ..transcript import analyse, collect_images

    messages = out["messages"]
    analysis = analyse(messages, facts_only=True)
    prefix = planned_prefix(state, out)
    max_chars, critical_chars = local_bounds(messages, config.local_max_chars, prefix)
    on_top: int | None = _statement_room(messages, critical_chars, prefix)
    cap = state.local_max_bytes if state.cut == out.get("cut") else None
    if count(cap) and cap < critical_chars + (on_top or 0):
        # The room the plan left beside the suffix in a small window: the statement counts in it.
        max_chars, critical_chars, on_top = min(max_chars, cap), min(critical_chars, cap), None
    body = local_summary(
        messages,
        analysis,
        max_chars=max_chars,
        critical_chars=critical_chars,
        max_bytes=critical_chars,
        images=images,
        statement_room=on_top,
    )
    state.ledger = record_text(body)
    if focus is not None:
        body = FOCUS_LINE.format(focus=focus) + body
    out["summary"] = canonical(body)
    kept = collect_images(messages) if images == "keep" else []
    if kept:
        out["retained_images"] = kept
    state.last_attempt = diag.attempt(
        diag.PREPARED, "local_summary", cut=out.get("cut"), summaryChars=len(out["summary"])
    )
    out["state"] = state.to_json()
    return out


def _statement_room(messages: list[dict[str, Any]], critical: int, prefix: int | None) -> int:
    """The task statement's bytes on top of the bound, as ``compact_plan`` allowed them."""
    from ..actions import carries_statement, statement_size

    _, statement = statement_size(messages)
    size = prefix if prefix is not None else sum(approx_size(m) for m in messages)
    return statement_room(size, critical, statement, carries_statement(messages))
