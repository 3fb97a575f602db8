"""UTF-8 safety: text with lone surrogates (malformed Unicode) must never crash a step."""

from __future__ import annotations

from typing import Any


def scrub(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; valid pairs are joined."""
    if text.isascii():  # constant time in CPython: most text needs no encoding round trip
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # utf-16 with surrogatepass joins valid pairs and flags only the lone halves.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def scrub_value(value: Any) -> Any:
    """A JSON-shaped value with every string (keys included) scrubbed."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_value(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_value(v) for v in value]
    return value
