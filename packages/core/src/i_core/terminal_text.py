"""Text from outside made safe to write to a terminal: the console's one sanitiser.

Whatever the core did not write itself (a model's answer, tool names and arguments, tool output,
worker and server messages, file names) may hold bytes that a terminal obeys instead of showing:
an escape sequence that erases the line, moves the cursor, sets the window title (OSC 0/2), writes
the clipboard (OSC 52) or hides a link (OSC 8); a carriage return or backspaces that overwrite what
was shown; a bidi override that reorders it. :func:`for_terminal` shows each such code point as
visible text instead, one code point at a time (no state, so a stream cut anywhere gives the same
screen as the whole text):

- C0 controls except tab and newline, DEL, and C1 controls (U+0080-U+009F, e.g. U+009B, a
  one-byte CSI) as ``\\xNN`` (ESC is the four characters ``\\x1b``);
- a carriage return as ``␍`` (a ``\\r\\n`` line end is a plain ``\\n``);
- the bidi embeddings, overrides and isolates U+202A-U+202E, U+2066-U+2069 as ``\\uNNNN``;
- undecodable bytes (lone surrogates) as ``\\xNN``, like ``i_protocol.jsonsafe.printable``.

Everything else is kept as it is: letters of any script (Arabic and Hebrew included: a terminal
lays them out by itself), emoji, tabs and newlines. :func:`clip` shortens a text for a prompt
and says how much it left out, so that a prompt can say so.
"""

from __future__ import annotations

from i_protocol.jsonsafe import printable

__all__ = ["BIDI_CONTROLS", "FORBIDDEN", "clip", "for_terminal"]

BIDI_CONTROLS = frozenset((*range(0x202A, 0x202F), *range(0x2066, 0x206A)))
"""Embeddings, overrides (LRE RLE PDF LRO RLO) and isolates (LRI RLI FSI PDI)."""

FORBIDDEN = frozenset((*(c for c in range(0x20) if c not in (0x09, 0x0A)), 0x7F, *range(0x80, 0xA0), *BIDI_CONTROLS))
"""Code points :func:`for_terminal` never lets through."""


def _shown(code: int) -> str:
    if code == 0x0D:
        return "\u240d"  # ␍, SYMBOL FOR CARRIAGE RETURN
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _shown(code) for code in FORBIDDEN}


def for_terminal(text: str) -> str:
    """``text`` with every control character, bidi control and undecodable byte shown as visible text."""
    return printable(text.replace("\r\n", "\n").translate(_TABLE))


def clip(text: str, max_chars: int, max_lines: int) -> tuple[str, int]:
    """At most ``max_chars`` characters and ``max_lines`` lines of ``text``, and how many characters
    were left out (0 when it is all there)."""
    shown = text[:max_chars]
    lines = shown.split("\n")
    if len(lines) > max_lines:
        shown = "\n".join(lines[:max_lines])
    return shown, len(text) - len(shown)
