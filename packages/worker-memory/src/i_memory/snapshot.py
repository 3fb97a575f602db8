"""The memory context that ``before_turn`` hands to the core's snapshot/delta mechanism."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson


def revision(entries: dict[str, str]) -> str:
    """A digest of the entries' content: equal memory gives an equal revision, whatever the key order."""
    canonical = orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)
    return "sha256:" + hashlib.sha256(canonical).hexdigest()


def memory_context(entries: dict[str, str]) -> dict[str, Any]:
    """``context.memory``: the full current state; the core diffs it against what it last injected."""
    return {"kind": "memory", "entries": dict(sorted(entries.items())), "revision": revision(entries)}
