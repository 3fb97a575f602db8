"""UTF-8 safety: text with lone surrogates (malformed Unicode) must never crash a step.

The rule is i_protocol's (``jsonsafe.replace_surrogates``, ``map_strings``): every lone surrogate
becomes U+FFFD, a valid pair its character.
"""

from __future__ import annotations

from typing import Any

from i_protocol.jsonsafe import map_strings
from i_protocol.jsonsafe import replace_surrogates as scrub

__all__ = ["folded", "scrub", "scrub_value"]


def scrub_value(value: Any) -> Any:
    """A JSON-shaped value with every string (keys included) scrubbed."""
    return map_strings(value, scrub)


_CASE_BLIND = (("\u017f", "s"), ("\u0131", "i"), ("\u0307", ""))
"""What a case-blind pattern also takes for ``s`` and ``i`` (long s, dotless i), and the dot that
``"İ".lower()`` leaves after its ``i``."""


def folded(text: str) -> str:
    """``text`` lower-cased, with :data:`_CASE_BLIND` folded: wherever a case-blind pattern finds an
    ASCII word without ``k``, the word is in the folded text (a C scan for the word can stand in for
    the pattern tried at every place, where most texts hold no such word)."""
    lower = text.lower()
    for odd, plain in _CASE_BLIND:
        if odd in lower:
            lower = lower.replace(odd, plain)
    return lower
