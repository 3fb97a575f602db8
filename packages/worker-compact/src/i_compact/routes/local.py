"""``before_compact``'s local route: the summary written here, with its state record."""

from __future__ import annotations

from typing import Any

from .. import diagnostics as diag
from ..allowance import local_bounds, planned_prefix
from ..config import CompactConfig
from ..failure import count
from ..normalize import canonical
from ..state import CompactState
from ..state_record import record_text


def local_route(out: dict[str, Any], state: CompactState, config: CompactConfig, images: str) -> dict[str, Any]:
    """``out`` with the local ``summary`` (and the images it keeps) and the updated state."""
    from ..local_summary import local_summary
    from ..transcript import analyse, collect_images

    messages = out["messages"]
    analysis = analyse(messages, facts_only=True)
    max_chars, critical_chars = local_bounds(messages, config.local_max_chars, planned_prefix(state, out))
    cap = state.local_max_bytes if state.cut == out.get("cut") else None
    if count(cap):  # the room the plan left beside the suffix in a small window
        max_chars, critical_chars = min(max_chars, cap), min(critical_chars, cap)
    body = local_summary(
        messages,
        analysis,
        max_chars=max_chars,
        critical_chars=critical_chars,
        max_bytes=critical_chars,
        images=images,
        statement_on_top=not count(cap),
    )
    state.ledger = record_text(body)
    out["summary"] = canonical(body)
    kept = collect_images(messages) if images == "keep" else []
    if kept:
        out["retained_images"] = kept
    state.last_attempt = diag.attempt(
        diag.PREPARED, "local_summary", cut=out.get("cut"), summaryChars=len(out["summary"])
    )
    out["state"] = state.to_json()
    return out
