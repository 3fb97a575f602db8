"""Fields a server may refuse, left out only when config.json says so (``omit_fields``).

The core sends ``store: false`` and ``include`` on the Responses wire (no hidden server state),
``phase`` on replayed Responses messages, and ``stream_options`` on a Chat stream. A compatible
server that refuses one answers HTTP 400 naming it; the error then names the field and the option
that leaves it out, and only that explicit option does: nothing is dropped by guessing.
"""

from __future__ import annotations

import re
from typing import Any

OMITTABLE = ("store", "include", "phase", "stream_options")
# Fields of an input item rather than of the body.
_ITEM_FIELDS = ("phase",)


def omitted(body: dict[str, Any], fields: tuple[str, ...]) -> dict[str, Any]:
    """``body`` without ``fields``: top-level ones, and ``phase`` on each Responses input item."""
    if not fields:
        return body
    kept = {key: value for key, value in body.items() if key not in fields}
    items = kept.get("input")
    drop = [field for field in _ITEM_FIELDS if field in fields]
    if drop and isinstance(items, list):
        kept["input"] = [
            {k: v for k, v in item.items() if k not in drop} if isinstance(item, dict) else item for item in items
        ]
    return kept


def refused_field(message: str, body: dict[str, Any]) -> str | None:
    """The omittable field a server's refusal names, when the request carried it; else None."""
    for field in OMITTABLE:
        if _carries(body, field) and re.search(rf"(?<![A-Za-z0-9_]){field}(?![A-Za-z0-9_])", message):
            return field
    return None


def refusal_hint(field: str) -> str:
    """What the user can do about a refused field: the option that leaves it out."""
    return f'the server refused the field "{field}": add "omit_fields": ["{field}"] to config.json to leave it out'


def _carries(body: dict[str, Any], field: str) -> bool:
    if field in body:
        return True
    items = body.get("input")
    return (
        field in _ITEM_FIELDS
        and isinstance(items, list)
        and any(isinstance(item, dict) and field in item for item in items)
    )
