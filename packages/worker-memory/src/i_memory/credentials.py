"""Recognise text that looks like a credential, so memory never stores one.

Memory is plain text on disk that is shown to the model every turn; a secret there leaks into
every later request. The patterns favour well-known key formats (few false positives) over
guessing from entropy, so hex commit hashes, UUIDs and ordinary prose pass.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"

# (what it is, pattern). Order matters only for which name a message reports.
_KEY_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("a private key block", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")),
    (
        "an API key in the 'sk-' format (OpenAI, Anthropic, DeepSeek, ...)",
        # The digit rule keeps hyphenated words such as 'sk-learn-compat-layer-v2' out.
        re.compile(_NOT_ALNUM_BEFORE + r"sk-(?=[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\d[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    ),
    ("a GitHub token", re.compile(_NOT_ALNUM_BEFORE + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})")),
    ("a GitLab token", re.compile(_NOT_ALNUM_BEFORE + r"glpat-[A-Za-z0-9_-]{20,}")),
    ("an AWS access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")),
    ("a Slack token", re.compile(_NOT_ALNUM_BEFORE + r"(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(_NOT_ALNUM_BEFORE + r"AIza[0-9A-Za-z_-]{35}" + _NOT_ALNUM_AFTER)),
    ("a Stripe key", re.compile(_NOT_ALNUM_BEFORE + r"(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}")),
    ("a Hugging Face token", re.compile(_NOT_ALNUM_BEFORE + r"hf_[A-Za-z0-9]{30,}")),
    ("an npm token", re.compile(_NOT_ALNUM_BEFORE + r"npm_[A-Za-z0-9]{36}")),
    ("a JSON Web Token", re.compile(r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")),
    ("a bearer token", re.compile(r"(?i)\bbearer\s+(?![$<%{*])[A-Za-z0-9._~+/-]{20,}=*")),
)

_URL_PASSWORD = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/?#@:]+:(?P<secret>[^\s/?#@]+)@")

# The name must end with the secret word: 'max_tokens=4096', 'tokenizer=x', 'api_key_env=NAME' are settings.
_SECRET_NAME = (
    r"[A-Za-z0-9_.-]*?(?:password|passwd|passphrase|pwd|secret|token|api[_-]?key|apikey|"
    r"access[_-]?key|private[_-]?key|credentials?)"
)
# name = value: an assignment is almost never prose.
_ASSIGNMENT = re.compile(r"(?i)\b" + _SECRET_NAME + r"""\s*=\s*["']?(?P<secret>[^\s"',;]+)""")
# name: value, only when that single token ends the line ('password: stored in the vault' is prose).
_LABEL = re.compile(
    r"(?im)\b(?:password|passwd|passphrase|pwd|secret|api[ _-]?key|access[_-]?token|auth[_-]?token|client[_-]?secret)"
    r"""\s*:\s*["']?(?P<secret>[^\s"']+)["']?[ \t]*$"""
)

# What a reference looks like: an environment variable, a template, a path, a mask.
_REFERENCE = re.compile(
    r"""^(?:
        \$\{?[A-Za-z_][A-Za-z0-9_]*\}?      # $NAME or ${NAME}
      | \$\(\S*                          # $(command that reads it)
      | %[A-Za-z_][A-Za-z0-9_]*%          # %NAME%
      | \{\{.*\}\}                        # {{ template }}
      | <[^>]*>                           # <placeholder>
      | env:[A-Za-z_][A-Za-z0-9_]*        # env:NAME
      | (?:file:)?(?:~|\.{1,2})?/\S*      # a path
      | [A-Z][A-Z0-9_]*                   # an environment variable name
      | \*+ | x{3,} | X{3,} | \.{3} | …   # masked
      | (?i:redacted|none|null|unset|empty|true|false)
    )$""",
    re.VERBOSE,
)


@dataclass(frozen=True)
class Credential:
    """Where a credential-looking run was found and what it looks like (never the text itself)."""

    kind: str
    start: int


def find_credential(text: str) -> Credential | None:
    """The first credential-looking run in ``text``, or None when it looks safe to store."""
    for kind, pattern in _KEY_FORMATS:
        match = pattern.search(text)
        if match:
            return Credential(kind, match.start())
    for kind, pattern in (
        ("a password inside a URL", _URL_PASSWORD),
        ("a secret assigned to a password/secret/token/key name", _ASSIGNMENT),
        ("a secret labelled as a password/secret/key", _LABEL),
    ):
        for match in pattern.finditer(text):
            if not _REFERENCE.match(match.group("secret")):
                return Credential(kind, match.start())
    return None
