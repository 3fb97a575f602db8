"""Text that is always safe to hand to the model: valid UTF-8, capped, with a marker for what was cut."""

from __future__ import annotations

from i_protocol.jsonsafe import printable

__all__ = ["cut_tail", "plural", "printable"]  # printable re-exported: the tools show undecodable text with it


def cut_tail(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} characters cut: output cap of {limit} characters ...]"


def plural(count: int, word: str) -> str:
    """``"1 file"`` / ``"2 files"``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
