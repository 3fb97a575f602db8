"""Compaction's side of secret redaction: the REDACT policy of :mod:`i_protocol.secrets`.

The patterns live in ``i_protocol.secrets`` (one table for memory and compaction alike). Only
the value is replaced; the marker names the pattern (``[REDACTED:secret_assignment]``) and the
surrounding name or location stays, so a summary can still say *where* a secret lives.
"""

from __future__ import annotations

import re

from i_protocol import secrets

from .request_memory import per_request

__all__ = ["redact", "secret_references"]

_REDACTED: dict[str, str] = per_request({})
"""Each text's redaction, for one request: the ledger, the action log and the
evidence read the same messages (about a third of a local compaction's redaction work)."""


def redact(text: str) -> str:
    """``text`` with secret-looking values replaced by a marker naming their kind."""
    done = _REDACTED.get(text)
    if done is None:
        done = _REDACTED[text] = secrets.redact(text)[0]
    return done


_MARK = re.escape(secrets.MARKER).replace(re.escape("{name}"), r"(\w+)")
_NAMED_MARK = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{1,80})[\"']?\s*[:=]\s*[\"']?" + _MARK)
_ANY_MARK = re.compile(_MARK)
_MARK_START = secrets.MARKER.partition("{name}")[0]


def secret_references(redacted: str) -> list[str]:
    """Names (or kinds) of the secrets a redacted text mentions: references, never values."""
    if _MARK_START not in redacted:  # a C scan; the name pattern would be tried at every letter
        return []
    refs = [f"{name} ({kind})" for name, kind in _NAMED_MARK.findall(redacted)]
    if not refs:
        refs = [f"unnamed {kind}" for kind in _ANY_MARK.findall(redacted)]
    return refs
