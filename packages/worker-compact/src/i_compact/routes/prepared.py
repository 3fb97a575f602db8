"""The summary the core prepared ahead of the trigger (extension ``prepared``, SPEC §3.4).

The core runs this worker's ``compact_plan`` / ``before_compact`` / ``after_compact`` while the
user reads, keeps the final summary, and at the trigger offers it: ``compact_plan`` gets
``prepared: {cut, summary_ref}`` and ``before_compact`` (for a cut at or after it) gets
``prepared: {cut, summary_ref, summary, state}``, ``state`` being this worker's own state at the end
of the preparation.

- **Plan**: the prepared cut is chosen instead of the planner's (later) cut when it is a valid
  boundary, not later than the planner's, and its candidate fits by the budget's estimates (the
  suffix is longer now); never on a second plan (``previous_attempt``: the candidate did not fit).
- **Before**: the prepared summary is handed back as the summary (no model request) only when the
  cut is the prepared cut and this worker's key for the request it would send now (the summary
  cache key: prompt, model, prepared transcript, images, rendering version) is the key the
  preparation recorded, so a changed prompt, model, image mode or transcript makes a new summary.
  The key is recorded as ``state.prepared_key``, whether or not the summary cache is on.
  It then goes through ``after_compact``'s ledger check like any summary.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from i_protocol.jsonsafe import map_strings, replace_surrogates

from .. import diagnostics as diag
from ..failure import count
from ..history import boundaries
from ..state import CompactState


def offered_cut(value: Any) -> int | None:
    """``compact_plan``'s ``prepared.cut`` when the field has the documented shape."""
    if not isinstance(value, dict) or not isinstance(value.get("summary_ref"), str):
        return None
    cut = value.get("cut")
    return cut if count(cut) else None


def prefer_prepared(history: list[dict[str, Any]], choice: Any, offer: Any, fit: Any, second_plan: bool) -> Any:
    """``choice`` moved to the prepared cut when that cut is usable now (see the module docstring)."""
    cut = offered_cut(offer)
    if cut is None or second_plan or choice is None or choice.cut is None:
        return choice
    if not 2 <= cut <= choice.cut or cut >= len(history) or not boundaries(history)[cut]:
        return choice
    if fit is not None:
        tokens = fit.candidate(cut)
        if tokens is not None and tokens > fit.capacity:
            return replace(choice, info={**choice.info, "preparedCut": cut, "preparedFits": False})
    return replace(choice, cut=cut, info={**choice.info, "preparedCut": cut, "preparedFits": True})


def use_prepared(out: dict[str, Any], state: CompactState, key: str, retained: list[Any]) -> bool:
    """Answer ``before_compact`` with the prepared summary when it is for this cut and this key."""
    given = out.pop("prepared", None)
    if not isinstance(given, dict) or given.get("cut") != out.get("cut"):
        return False
    summary, prepared_state = given.get("summary"), given.get("state")
    if not isinstance(summary, str) or not summary.strip() or not isinstance(prepared_state, dict):
        return False
    if prepared_state.get("prepared_key") != key:
        return False
    out["summary"] = summary
    state.sections = None  # the prepared summary holds them already: after_compact appends none again
    state.cache_hit = True  # already stored (or not wanted) by the preparation's after_compact
    state.last_attempt = diag.attempt(diag.PREPARED, "prepared_summary_used", cut=out.get("cut"))
    out["state"] = state.to_json()
    if retained:
        out["retained_images"] = map_strings(retained, replace_surrogates)
    return True
