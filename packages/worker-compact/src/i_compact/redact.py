"""Compaction's side of secret redaction: the REDACT policy of :mod:`i_protocol.secrets`.

The patterns live in ``i_protocol.secrets`` (one table for memory and compaction alike). Only
the value is replaced; the marker names the pattern (``[REDACTED:secret_assignment]``) and the
surrounding name or location stays, so a summary can still say *where* a secret lives.
"""

from __future__ import annotations

import re

from i_protocol import secrets

from .request_memory import per_request

__all__ = ["gate_free", "known_gate_free", "redact", "secret_references"]

_REDACTED: dict[str, str] = per_request({})
"""Each text's redaction, for one request: the ledger, the action log and the
evidence read the same messages (about a third of a local compaction's redaction work)."""
_GATE_FREE: dict[str, bool] = per_request({})
"""Whether each text asked about holds no gate word of the secret table, for one request."""


def redact(text: str) -> str:
    """``text`` with secret-looking values replaced by a marker naming their kind."""
    done = _REDACTED.get(text)
    if done is None:
        done = _REDACTED[text] = text if gate_free(text) else secrets.redact(text)[0]
    return done


def gate_free(text: str) -> bool:
    """Whether ``text`` holds no gate word of the secret table (``secrets.GATE_WORDS``): then no
    secret is found in it, nor in any part of it, nor in parts of it joined by newlines (no gate
    word holds one). Most messages hold none: their parts need no redaction of their own."""
    free = _GATE_FREE.get(text)
    if free is None:
        free = _GATE_FREE[text] = not secrets.may_contain_secret(text)
    return free


def known_gate_free(text: str) -> bool:
    """Whether :func:`gate_free` (or :func:`redact`) already found ``text`` free of gate words in
    this request (False when it was not asked)."""
    return _GATE_FREE.get(text, False)


_MARK = re.escape(secrets.MARKER).replace(re.escape("{name}"), r"(\w+)")
_ANY_MARK = re.compile(_MARK)
_MARK_START = secrets.MARKER.partition("{name}")[0]


_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
_NAME_CHARS = _NAME_START | frozenset("0123456789.-")
_QUOTES = "\"'"


def secret_references(redacted: str) -> list[str]:
    """Names (or kinds) of the secrets a redacted text mentions: references, never values.

    What ``findall`` of ``name["']? [:=] ["']?<marker>`` gives (a name of 2-81 characters), found from
    each marker backwards (the pattern tried at
    every letter of a 20 MB history cost seconds).
    """
    if _MARK_START not in redacted:  # a C scan
        return []
    refs: list[str] = []
    floor = 0
    for mark in _ANY_MARK.finditer(redacted):
        name = _name_before(redacted, mark.start(), floor)
        if name is not None:
            refs.append(f"{name} ({mark.group(1)})")
        floor = mark.end()
    if not refs:
        refs = [f"unnamed {kind}" for kind in _ANY_MARK.findall(redacted)]
    return refs


def _name_before(text: str, end: int, floor: int) -> str | None:
    """The name before the marker at ``end`` (``name["']? [:=] ["']?``), not before ``floor``: the
    leftmost start that pattern would take."""
    if end > floor and text[end - 1] in _QUOTES:
        end -= 1
    while end > floor and text[end - 1].isspace():
        end -= 1
    if end <= floor or text[end - 1] not in ":=":
        return None
    end -= 1
    while end > floor and text[end - 1].isspace():
        end -= 1
    if end > floor and text[end - 1] in _QUOTES:
        end -= 1
    start = end
    while start > floor and text[start - 1] in _NAME_CHARS:
        start -= 1
    for first in range(max(start, end - 81), end - 1):
        if text[first] in _NAME_START:
            return text[first:end]
    return None
