"""Secret redaction: values that look like keys, tokens, private keys or URL passwords.

Only the value is replaced; the marker names the kind (``[REDACTED:api_key]``) and the
surrounding name or location stays, so a summary can still say *where* a secret lives.
"""

from __future__ import annotations

import re

_MARK = "[REDACTED:{}]"

# Order matters: the widest, most specific shapes first. Each pattern has a cheap substring
# gate (checked on the lower-cased text) so that ordinary text costs a few ``in`` tests.
_PATTERNS: list[tuple[str, tuple[str, ...], re.Pattern[str]]] = [
    (
        "private_key",
        ("private key",),
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.S,
        ),
    ),
    ("jwt", ("eyj",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("api_key", ("sk-",), re.compile(r"\bsk-(?:ant-|proj-|live-|test-)?[A-Za-z0-9_-]{16,}")),
    (
        "github_token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,})"),
    ),
    ("aws_access_key", ("akia", "asia"), re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("slack_token", ("xox",), re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("google_api_key", ("aiza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}")),
    ("stripe_key", ("_live_", "_test_"), re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}")),
]

_BEARER = re.compile(r"(?i)\b(bearer|token)(\s+)([A-Za-z0-9._~+/-]{16,}=*)")
_URL_PASSWORD = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s:/@]+:)([^\s@/]+)(@)")
# NAME=value, NAME: value, "name": "value" where the name says it is secret. Names ending in
# an id suffix are references, not secrets (``token_id``, ``secretId``).
_ASSIGNMENT = re.compile(
    r"""(?ix)
    (?P<name>["']?\b[A-Z0-9_.-]*(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|private[_-]?key|credential)[A-Z0-9_.-]*\b["']?)
    (?P<sep>\s*[:=]\s*)
    (?P<quote>["']?)
    (?P<value>[^\s"',;&}{\]\[)(]{6,})
    """
)
_ASSIGNMENT_GATE = ("passw", "secret", "token", "key", "credential")
_ID_NAME = re.compile(r"(?i)(?:_id|_ids|id|ids|_name|name|_env|_file|_path|path)$")


# A cover of every gate word of every pattern: each gate contains one of these words, so a text
# that contains none of them (most logs, code and JSON) returns at once. Words with a rare letter
# are only looked for when that letter occurs (a one-character ``in`` is a memchr): six substring
# scans instead of twenty-two, far cheaper than a case-insensitive alternation.
_COVER_ALWAYS = ("secret", "credential", "://", "gh", "asia", "_test_")
_COVER_BY_LETTER = (
    ("k", ("key", "token", "sk-", "akia")),
    ("w", ("passw",)),
    ("b", ("bearer", "github_pat_")),
    ("j", ("eyj",)),
    ("x", ("xox",)),
    ("z", ("aiza",)),
    ("v", ("_live_",)),
)
_COVER = _COVER_ALWAYS + tuple(word for _, words in _COVER_BY_LETTER for word in words)
GATES = frozenset({g for _, gates, _ in _PATTERNS for g in gates} | set(_ASSIGNMENT_GATE) | {"bearer", "://"})
"""Every word whose presence lets :func:`redact` try a pattern (tests check ``_COVER`` covers them)."""


def may_contain_secret(text: str) -> bool:
    """False when :func:`redact` cannot change ``text`` nor any substring of it (no gate word)."""
    lower = text.lower()
    for word in _COVER_ALWAYS:
        if word in lower:
            return True
    for letter, words in _COVER_BY_LETTER:
        if letter in lower:
            for word in words:
                if word in lower:
                    return True
    return False


def redact(text: str) -> str:
    """``text`` with secret-looking values replaced by a marker naming their kind."""
    if not may_contain_secret(text):
        return text
    lower = text.lower()
    for kind, gates, pattern in _PATTERNS:
        if any(gate in lower for gate in gates):
            text = pattern.sub(_MARK.format(kind), text)
    if "://" in text and "@" in text:
        text = _URL_PASSWORD.sub(lambda m: m.group(1) + _MARK.format("password") + m.group(3), text)
    if "bearer" in lower or "token" in lower:
        text = _BEARER.sub(_bearer, text)
    if any(gate in lower for gate in _ASSIGNMENT_GATE):
        text = _ASSIGNMENT.sub(_assignment, text)
    return text


def _bearer(match: re.Match[str]) -> str:
    if match.group(3).startswith("[REDACTED"):
        return match.group(0)
    return match.group(1) + match.group(2) + _MARK.format("token")


def _assignment(match: re.Match[str]) -> str:
    name = match.group("name").strip("\"'")
    value = match.group("value")
    if _ID_NAME.search(name) or value.startswith("[REDACTED") or value.startswith("$"):
        return match.group(0)
    # ``tests/test_token.py::test_x`` and ``token::Token`` are a path and a scope, not a
    # ``name: value`` pair: a pytest node id in an error line must survive as evidence.
    start = match.start()
    if value.startswith(":") or (start and match.string[start - 1] in "/\\"):
        return match.group(0)
    if value.isdigit() or value.lower() in {"none", "null", "true", "false", "required", "redacted"}:
        return match.group(0)
    kind = "password" if re.search(r"(?i)passw", name) else "secret"
    return match.group("name") + match.group("sep") + match.group("quote") + _MARK.format(kind)


def contains_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return redact(text) != text


_NAMED_MARK = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{1,80})[\"']?\s*[:=]\s*[\"']?\[REDACTED:(\w+)\]")
_ANY_MARK = re.compile(r"\[REDACTED:(\w+)\]")


def secret_references(redacted: str) -> list[str]:
    """Names (or kinds) of the secrets a redacted text mentions: references, never values."""
    refs = [f"{name} ({kind})" for name, kind in _NAMED_MARK.findall(redacted)]
    if not refs:
        refs = [f"unnamed {kind}" for kind in _ANY_MARK.findall(redacted)]
    return refs
