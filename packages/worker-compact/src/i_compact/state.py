"""The ``state`` this worker round-trips through the core, as one typed object.

The core never reads it (SPEC §3.5): it hands back what the previous hook returned. Reading is
tolerant, so a state from an older worker never stops a compaction: a missing or wrongly typed key
takes its default, and a key this worker does not know is kept in :attr:`CompactState.extra` and
written back as it came.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

STATE_SCHEMA = 1

_JSON_NAMES = {"last_attempt": "lastAttempt"}
"""Fields whose JSON key is not the field name."""
_NULL_WHEN_PLANNED = ("previous_summary", "budget")
"""Written as null in a planned state (``compact_plan`` always says them)."""


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


_CHECKS: dict[type | str, Any] = {
    "count": _is_count,
    str: lambda v: isinstance(v, str),
    bool: lambda v: isinstance(v, bool),
    dict: lambda v: isinstance(v, dict),
}


@dataclass
class CompactState:
    """One compaction attempt's working state: what ``compact_plan`` decided, what the hooks after
    it prepared, and the attempt's diagnostics (``lastAttempt``, ``plan``)."""

    schema: int | None = None
    worker: str | None = None
    attempt: str | None = None
    """The attempt id (also in the diagnostics files)."""
    forced: bool | None = None
    policy: dict[str, Any] | None = None
    """What the plan ran under: enabled, keep_recent, images, mode, config."""
    previous_summary: str | None = None
    budget: dict[str, Any] | None = None
    previous_attempt: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    """A summary request's budget (capacity, output_reserve, tokens_per_byte)."""
    cut: int | None = None
    summary_max_tokens: int | None = None
    local_max_bytes: int | None = None
    sizes: dict[str, Any] | None = None
    ledger: str | None = None
    sections_max_bytes: int | None = None
    """Model mode: the room the plan left for the coding sections beside the reply (issue 30)."""
    sections: str | None = None
    """Model mode: the coding sections (``actions``) appended to the model's summary."""
    """The prefix's state record, as text."""
    prompt_source: str | None = None
    transcript: dict[str, Any] | None = None
    cache_key: str | None = None
    cache_hit: bool | None = None
    prepared_key: str | None = None
    """The key of the summary request (the summary cache's), by which a summary the core prepared
    ahead of the trigger is checked (``routes.prepared``)."""
    chunking: dict[str, Any] | None = None
    images_downgraded: str | None = None
    check: dict[str, Any] | None = None
    """The ledger check's progress across repair rounds."""
    fallback: str | None = None
    """``local``: this plan answers with the local summary although compact.json says model (the
    model summary of the previous plan did not finish normally)."""
    plan: dict[str, Any] | None = None
    last_attempt: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    """Keys this worker does not know, kept as they came."""

    @classmethod
    def fresh(cls, worker: str) -> CompactState:
        """The state of a hook called without one (or with something that is not an object)."""
        return cls(schema=STATE_SCHEMA, worker=worker)

    @classmethod
    def from_json(cls, value: Any, worker: str) -> CompactState:
        """``value`` as a state; anything but an object gives :meth:`fresh`."""
        if not isinstance(value, dict):
            return cls.fresh(worker)
        state = cls()
        known = set()
        for item in fields(cls):
            if item.name == "extra":
                continue
            key = _JSON_NAMES.get(item.name, item.name)
            known.add(key)
            if key in value and _CHECKS[_KINDS[item.name]](value[key]):
                setattr(state, item.name, value[key])
        state.extra = {k: v for k, v in value.items() if k not in known}
        return state

    def to_json(self) -> dict[str, Any]:
        """The state as the JSON object the core carries: unset fields left out, unknown keys kept."""
        out: dict[str, Any] = dict(self.extra)
        for item in fields(self):
            if item.name == "extra":
                continue
            value = getattr(self, item.name)
            if value is not None or (item.name in _NULL_WHEN_PLANNED and self.attempt is not None):
                out[_JSON_NAMES.get(item.name, item.name)] = value
        return out

    @property
    def mode(self) -> Any:
        """The planned mode (``local`` / ``model``), or None."""
        return (self.policy or {}).get("mode")


_KINDS: dict[str, type | str] = {
    "schema": "count",
    "worker": str,
    "attempt": str,
    "forced": bool,
    "policy": dict,
    "previous_summary": str,
    "budget": dict,
    "previous_attempt": dict,
    "request": dict,
    "cut": "count",
    "summary_max_tokens": "count",
    "local_max_bytes": "count",
    "sizes": dict,
    "ledger": str,
    "sections_max_bytes": "count",
    "sections": str,
    "prompt_source": str,
    "transcript": dict,
    "cache_key": str,
    "cache_hit": bool,
    "prepared_key": str,
    "chunking": dict,
    "images_downgraded": str,
    "check": dict,
    "fallback": str,
    "plan": dict,
    "last_attempt": dict,
}
