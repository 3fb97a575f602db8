"""Case folding for a fast pre-scan: a C substring search over folded text stands in for a
case-blind pattern tried at every position (the text holds no such word, the pattern cannot match)."""

from __future__ import annotations

__all__ = ["folded"]

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
