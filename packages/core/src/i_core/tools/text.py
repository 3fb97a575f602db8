"""Text that is always safe to hand to the model: valid UTF-8, capped, with a marker for what was cut."""

from __future__ import annotations


def printable(text: str) -> str:
    """``text`` with lone surrogates (undecodable file names, bad JSON escapes) shown as escapes."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        # Surrogate-escaped bytes from the file system come back as \\xNN, as the bytes they were.
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def cut_tail(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, ending with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} characters cut: output cap of {limit} characters ...]"


def plural(count: int, word: str) -> str:
    """``"1 file"`` / ``"2 files"``."""
    return f"{count} {word}" if count == 1 else f"{count} {word}s"
