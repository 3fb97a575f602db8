"""One table of secret patterns, two policies: *refuse* (memory) and *redact* (summaries, logs).

Public API (versioned with i-protocol): :class:`SecretMatch`, :data:`DESCRIPTIONS`,
:data:`GATE_WORDS`, :data:`MARKER`, :func:`find_secrets`, :func:`contains_secret`,
:func:`may_contain_secret`, :func:`redact` and :func:`looks_like_credential` (the name rule
for config fields and environment variables: ``github_token`` holds a secret, ``max_tokens``
does not; the one name rule, from :mod:`i_protocol.credentials`). Everything named ``_…`` is
private. The module is imported on demand
(``from i_protocol.secrets import …``), not by ``i_protocol`` itself, so that a worker that never
checks secrets does not compile the table at start-up.

- **Refuse**: :func:`contains_secret` / :func:`find_secrets` say *what kind* of secret a text
  holds (a pattern name; :data:`DESCRIPTIONS` words it for a message), never the value.
- **Redact**: :func:`redact` replaces only the secret **value** by a marker naming the pattern:
  ``DB_PASS=[REDACTED:secret_assignment]``, ``Authorization: Basic [REDACTED:basic_auth]``,
  ``https://bob:[REDACTED:url_password]@host``; names, flags, users and hosts stay readable.

What is a secret (each pattern of :data:`DESCRIPTIONS`): key formats with a known prefix
(``sk-``, ``ghp_``, ``glpat-``, ``AKIA``, ``xoxb-``, ``AIza``, ``sk_live_``, ``hf_``, ``npm_``,
JWTs, PEM private key blocks), credentials in known places (``Bearer``/``Basic`` headers,
``Cookie:``/``Set-Cookie:`` headers, ``scheme://user:pw@host``, ``mysql -p<pw>``, a netrc
``login … password …`` entry) and values given to a **secret name**: ``NAME=value``,
``NAME: value``, ``--name value``. Whether a name is a secret name is decided by the one name
rule of :mod:`i_protocol.credentials` (:func:`looks_like_credential`, the rule config.json and
mcp.json names are checked with): a word such as ``pass``, ``pwd``, ``…password``, ``…secret``,
``…token``, ``…credential(s)``, ``key`` after ``api``/``access``/``private``/…, or a last word
``auth``/``authorization``/``bearer``/``cookie``.

What is not: a name whose last word says it holds something else (``password_file``,
``api_key_env``, ``token_id``, ``token_budget``, ``secret_store.py``; ``key`` alone), so
**``--password-file PATH`` is a path, not a secret**; a reference
as the value (``$VAR``, ``${VAR}``, ``%VAR%``, ``env:VAR``, an ``UPPER_SNAKE`` name, a path,
``<placeholder>``, ``{{template}}``, a mask, ``none``/``true``/``undefined``/…, a type such as
``str``); a **code expression** after a secret name (not after a ``--flag``): a value that starts
with a keyword (``await``, ``async``, ``new``, ``yield``, ``typeof``, ``lambda``, …), is a member
access (``options.apiKey``), is followed by a call, an index or a member (``f(…)``, ``keys[0]``,
``"~".join``) or by an operator (``"~" + home``, ``t ?? x``; not shell's ``&&``, ``||``, ``|``,
``;`` or redirections), or is the name's own last part (``password=password``); while a bare
word or a quoted literal stays a secret (``DB_PASS=hunter2``, ``password = "hunter2"``); a
``name: value`` label in the middle of a line whose value is a plain word (``password: stored
in the vault`` is prose; at the end of a line or quoted it is a value);
``sk-`` words without a random-looking run (``sk-learn-compat-layer-v2``); ids and hashes
(``tx_7781``, ``HAT136``, hex digests, UUIDs), which match no prefix. There is no entropy
guessing: a secret in an unknown format can get through.

A mask never crosses a line end, real or escaped (``\\n`` inside a JSON string, as in a tool
call's arguments): a value is read escape by escape and ends there, and a name right after an
escaped line end starts after it. A private key block is the one mask that spans lines.

Linear time: every pattern starts with a literal or a class of first characters, so the engine
skips to candidates in C, then checks with a fixed-width look-behind that a key starts a run of
its characters (so a run is tried once, not at each of its positions). Every repetition that
can fail after scanning is bounded; runs after a fixed prefix (``sk-…``) are possessive and
unbounded, because a match consumes what it scanned and the whole key must go, not its first N
characters. A secret name is found from its secret word: the rest of the name is looked up at
most 100 characters back, and its value (at most 256 characters: longer is not a password) is
matched only once the name qualifies. A 1 MB adversarial text takes well under a second.
Case-insensitive matching and gate words are ASCII only.

Real tool output is full of the secret words (``key=`` in code, ``token`` in logs and headers),
so the constant matters as much as the linearity: the gate words are looked for by groups (one
scan per group when none is there), and the three name patterns (flag, assignment, label) share
one scan for their candidate names, each pattern then tried there anchored; a name's verdict is
cached (names repeat). Each candidate costs a small, fixed number of regex calls
(``tests/test_secrets_dense.py`` counts them).
"""

from __future__ import annotations

import binascii
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import TypeAlias

__all__ = [
    "DESCRIPTIONS",
    "GATE_WORDS",
    "MARKER",
    "SecretMatch",
    "contains_secret",
    "find_secrets",
    "looks_like_credential",
    "may_contain_secret",
    "redact",
]

from .credentials import looks_like_credential  # re-exported: part of this module's API

MARKER = "[REDACTED:{name}]"
"""The default replacement of :func:`redact`; ``{name}`` is the pattern name."""


@dataclass(frozen=True, slots=True)
class SecretMatch:
    """Where a secret value lies in a text and which pattern found it (never the value)."""

    name: str
    start: int
    end: int

    @property
    def span(self) -> tuple[int, int]:
        return self.start, self.end


_Check = Callable[[re.Match[str]], tuple[int, int] | None]


@dataclass(frozen=True, slots=True)
class _Pattern:
    name: str
    description: str
    gates: tuple[str, ...]  # lower-case words; every match holds one of them
    regex: re.Pattern[str]
    check: _Check | None = None  # the secret's span in a match, None when it holds none; default: _span
    named: bool = False  # the regex starts with _NAME: run with the other such patterns (_named_spans)


def _compile(pattern: str) -> re.Pattern[str]:
    # ASCII: case-insensitive matching folds only ASCII letters, so the gate words (looked up
    # in ``text.lower()``) are exact, and \s means ASCII white space.
    return re.compile(pattern, re.ASCII)


# A value after a name: quoted (an optional backslash for JSON inside a JSON string) or bare.
# A quote followed by JSON or code punctuation closes a string (``"mysql -p", "b"``,
# ``"Cookie: ")``): it opens no value; a single-quoted value never runs over a double quote (the
# end of the JSON string it is in).
# A value is read escape by escape and never runs over a line end, real or escaped (``\n``
# inside a JSON string): the next line is not part of it.
_VALUE = (
    r"""(?:\\?"(?P<dq>(?![\s,:;)}\]])(?:[^"\\\r\n]|\\[^"\r\nrn]){1,256})"""
    r"""|\\?'(?P<sq>(?![\s,:;)}\]])(?:[^'"\\\r\n]|\\[^'"\r\nrn]){1,256})"""
    r"""|(?P<bare>(?:[^\s"'`,;()\[\]{}<>&\\]|\\[^\s"'`nrt]){1,256}))"""
)
_VALUE_GROUPS = ("value", "dq", "sq", "bare")
_VALUE_RE = _compile(_VALUE)
# The other arguments of a command, before the one that holds a password (never over a line end).
_ARGS = r"(?:[ \t]{1,8}(?:[^\s;|&\\]|\\[^\s;|&nrt]){1,256}){0,16}?"
# An option's value: not another option, a pipe or a redirection (``mysql -p -h db`` prompts).
_OPTION_VALUE = r"(?![-|<>])" + _VALUE
_PEM = r"-----{0}(?:[A-Z0-9]+ ){{0,8}}PRIVATE KEY(?: BLOCK)?-----"
_BASE64URL = "A-Za-z0-9_-"
_NAME_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-")
_NAME_MAX = 100  # characters of a name before its secret word


def _words(words: tuple[str, ...], *, fold: bool = False, run: str | None = None) -> str:
    """A regex for one of ``words`` (ASCII case folded if ``fold``), not inside a run of ``run``
    characters when given. It starts with a literal or a class of first characters, so that the
    engine skips ahead to candidates in C: a leading look-behind or ``(?i)`` tests every position.
    """

    def first(word: str) -> str:
        return f"[{word[0].lower()}{word[0].upper()}]" if fold else re.escape(word[0])

    def branch(word: str) -> str:
        rest = re.escape(word[1:])
        tail = f"(?i:{rest})" if fold else rest
        return tail + (f"(?<![{run}].{{{len(word)}}})" if run else "")

    if len(words) == 1:
        return first(words[0]) + branch(words[0])
    heads = "".join(sorted({first(word)[1:-1] if fold else word[0] for word in words}))
    branches = "|".join(f"(?<={first(word)}){branch(word)}" for word in words)
    return f"[{re.escape(heads)}](?:{branches})"


# A name whose secret word (the precise rule is _is_secret_name) starts the match; the rest of
# the name, before the word, is found by _name_start (a regex cannot look back a variable way).
_NAME_WORDS = ("pass", "pwd", "secret", "token", "credential", "key", "auth", "bearer", "cookie")
_NAME = "(?P<name>" + _words(_NAME_WORDS, fold=True) + r"[A-Za-z0-9_.-]{0,40}+)"

# Where a name pattern can match: a secret word, the rest of its name and the first character of
# a separator (each name pattern's separator starts so). In an ASCII text it is looked for in the
# lower-cased text with plain literals, which the engine scans for about twice as fast.
_NAME_SEPARATOR = r"""(?=[ \t=]|\\?["']?[ \t]{0,8}[=:])"""

# The engine skips ahead to the first characters of these words; ``a`` and ``b`` are frequent
# letters that would stop it everywhere, so ``auth`` and ``bearer`` (secret words only as a
# name's last word) are looked for only in a text that holds one of them.
_RARE_NAME_WORDS = ("auth", "bearer")
_COMMON_NAME_WORDS = tuple(word for word in _NAME_WORDS if word not in _RARE_NAME_WORDS)


def _candidates(words: tuple[str, ...]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The candidate pattern for a text as it is and for an ASCII text lower-cased."""
    name = "(?P<name>" + _words(words, fold=True) + r"[A-Za-z0-9_.-]{0,40}+)"
    lower = f"(?:{'|'.join(words)})" + r"[a-z0-9_.-]{0,40}+"
    return _compile(name + _NAME_SEPARATOR), _compile(lower + _NAME_SEPARATOR)


_NAME_CANDIDATES = _candidates(_COMMON_NAME_WORDS)
_ALL_NAME_CANDIDATES = _candidates(_NAME_WORDS)

_REFERENCE = _compile(
    r"""(?x)
      \$.*                                  # $NAME, ${NAME}, $(command)
    | %[A-Za-z_][A-Za-z0-9_]*%              # %NAME%
    | \{\{.*\}\} | <[^>]*>                  # {{ template }}, <placeholder>
    | env:[A-Za-z_][A-Za-z0-9_]*            # env:NAME
    | (?:file:)?(?:~|\.{1,2})?/.*           # a path
    | [A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+ | [A-Z]+[0-9]*   # an environment variable name
    | \*+ | [xX]{3,} | \.{3} | \u2026 | \[REDACTED.*   # masked, or redacted already
    """
)
# Words that stand for no value: empty markers and type names (``password: str``).
_NOT_VALUES = frozenset(
    "none null nil unset empty true false required redacted optional undefined "  # noqa: SIM905 - a word list reads best so
    "str bytes int bool string number any object secretstr "
    "bearer basic digest negotiate ntlm token".split()  # an auth scheme: ``Authorization: Bearer …``
)
# A value is a code expression, not a secret, when it starts with a keyword, is a member access
# (``options.apiKey``, ``process.env.KEY``), or is followed by a call, an index, a member of a
# literal (``"~".join``) or an operator (``"~" + home``). A bare word or a quoted literal stays a
# secret. Shell's ``&&``, ``||``, ``|``, ``;`` and redirections are not operators here
# (``DB_PASS=x && ./run``), nor a spaced ``-`` (prose, flags).
_CODE_KEYWORDS = frozenset("await async new yield typeof void delete lambda function not".split())  # noqa: SIM905
_MEMBER_ACCESS = _compile(r"[A-Za-z_$][\w$]*(?:(?:\?\.|!\.|\.|::|->)[A-Za-z_$][\w$]*)+")
_CONTINUED = _compile(
    r"""\\?["']?(?:[(\[]|\.[A-Za-z_$])"""  # right after it: a call, an index, a member
    r"""|\\?["']?[ \t]{0,8}(?:[+*%]|/[ \t]|\?\??[ \t]|[=!]==?|[<>]=)"""  # then an operator
)
_EOL = _compile(r"""\\?["']?[ \t]{0,64}(?:\r?\n|\\r\\n|\\n|\Z)""")
# ``pass`` is a secret word only as a whole word (``DB_PASS=``, ``--pass x``): its gates include
# what may follow it in a name, so ``3 passed`` in test output costs no pattern scan.
_PASS_GATES = ("passw", "passp", *(f"pass{c}" for c in "_.- \t\"'\\=:"))
_NAME_GATES = (*_PASS_GATES, *_NAME_WORDS[1:])


# The name rule is i_protocol.credentials' (config.json and mcp.json names ask it too): one
# verdict per name; cached, because names repeat (``key``, ``max_tokens``).
_is_secret_name = lru_cache(maxsize=4096)(looks_like_credential)


def _value_group(match: re.Match[str]) -> str | int:
    """The group that holds the value (one of ``_VALUE_GROUPS``), or 0: the whole match."""
    for group in _VALUE_GROUPS:
        if group in match.re.groupindex and match.group(group) is not None:
            return group
    return 0


def _is_value(match: re.Match[str]) -> bool:
    """Whether the value of ``match`` is a secret rather than a reference to one."""
    value = match.group(_value_group(match))
    if value.lower() in _NOT_VALUES or _REFERENCE.fullmatch(value):
        return False
    end = match.end()
    return match.string[end : end + 1] not in ("(", "[")  # f(…), os.environ[…]: code


def _name_start(text: str, word: int) -> int | None:
    """Where the name holding the secret word at ``word`` starts, or None when it is too long."""
    global _LAST_NAME_START
    last = _LAST_NAME_START
    if last[0] is text and last[1] == word:  # the next name pattern, at the same candidate
        return last[2]
    start, lowest = word, max(0, word - _NAME_MAX)
    while start > lowest and text[start - 1] in _NAME_CHARS:
        start -= 1
    found = None if start == lowest and start and text[start - 1] in _NAME_CHARS else start
    _LAST_NAME_START = (text, word, found)  # one tuple, replaced whole: safe across threads
    return found


_LAST_NAME_START: tuple[str, int, int | None] = ("", -1, None)
"""The last answer of :func:`_name_start` (holding its text, so that no other text takes its id):
the three name patterns ask it for the same candidate, one after the other."""


def _name(match: re.Match[str], after: str) -> str | None:
    """The whole name of ``match`` (from its first character to the end of the ``name`` group),
    unless it is too long or part of a path or a longer token (the character before it is one of
    ``after``)."""
    text = match.string
    start = _name_start(text, match.start())
    if start is None:
        return None
    if start and text[start - 1] == "\\" and text[start] in "nrt" and _odd_backslashes(text, start):
        start += 1  # after an escaped line end or tab (``\nDB_PASS=`` inside a JSON string)
    elif start and text[start - 1] in after:
        return None
    return text[start : match.end("name")]


def _flag_value(match: re.Match[str]) -> tuple[int, int] | None:
    name = _name(match, "")
    if name is None or not name.startswith("--") or not _is_secret_name(name):
        return None
    return _value_span(match, code=False)  # a command line: ``--token a.b`` is no member access


def _assigned_value(match: re.Match[str]) -> tuple[int, int] | None:
    name = _name(match, "/\\")
    return _value_span(match, name=name) if name is not None and _is_secret_name(name) else None


def _labelled_value(match: re.Match[str]) -> tuple[int, int] | None:
    """The name may be two words (``API key: …``, ``DB password: …``)."""
    name = _name(match, "/\\:")
    if name is None:
        return None
    end = match.end("name")
    if _is_secret_name(name) or _is_secret_name(_word_before(match.string, end - len(name), end)):
        return _value_span(match, labelled=True, name=name)
    return None


def _value_span(
    match: re.Match[str], *, labelled: bool = False, code: bool = True, name: str = ""
) -> tuple[int, int] | None:
    """The span of the value after a name and its separator, unless it is a reference or (with
    ``code``) a code expression. Matched apart from the name, so that a name that is no secret's
    costs no scan of a value. A label's (``name: value``) value is one when quoted, when it ends
    its line or when it is not a plain word: ``password: stored in the vault`` is prose."""
    value = _VALUE_RE.match(match.string, match.end())
    if value is None or not _is_value(value) or (code and _is_code(value, name)):
        return None
    bare = value.group("bare")
    prose = bare is not None and all(char.isalpha() or char in "-_.'" for char in bare)
    if labelled and prose and not _EOL.match(value.string, value.end()):
        return None
    return _span(value)


def _is_code(value: re.Match[str], name: str) -> bool:
    """Whether a value after the secret name ``name`` is a code expression (:data:`_CODE_KEYWORDS`);
    a bare value that is the name's own last part passes a variable on (``password=password``,
    ``self.token = token``)."""
    bare = value.group("bare")
    if bare is not None and (
        bare.rstrip(":") in _CODE_KEYWORDS
        or _MEMBER_ACCESS.fullmatch(bare)
        or bare.lower() == name.rpartition(".")[2].lstrip("-").lower()
    ):
        return True
    return _CONTINUED.match(value.string, value.end()) is not None


def _word_before(text: str, start: int, end: int) -> str:
    """The name ``text[start:end]`` with the word before it (``API key``), or "" when there is no
    such word (one space between)."""
    space = start - 1
    if space < 1 or text[space] != " ":
        return ""
    first = _name_start(text, space)
    return "" if first is None or first == space else text[first:end]


def _when(test: Callable[[re.Match[str]], bool]) -> _Check:
    """A check keeping the value of a match that ``test`` accepts."""
    return lambda match: _span(match) if test(match) else None


def _random_segment(match: re.Match[str]) -> bool:
    """An ``sk-`` key has a random run (12+ characters with a digit or an upper-case letter)."""
    for segment in match.group()[3:].split("-"):
        if len(segment) >= 12 and any(c.isdigit() or c.isupper() for c in segment):
            return True
    return False


def _bearer_value(match: re.Match[str]) -> bool:
    """Not a path; after the plain word ``token`` (prose as often as a header), random-looking:
    letters and digits, or both cases, and no ``/`` (``token verification_steps`` and
    ``the token src/v2/auth.py`` are prose)."""
    value = match.group("value")
    if value.startswith(("/", "./", "../", "~/")):
        return False
    if match.group("word").lower() != "token":
        return True
    if "/" in value:
        return False
    digit, lower, upper = (any(test(c) for c in value) for test in (str.isdigit, str.islower, str.isupper))
    return (digit and (lower or upper)) or (lower and upper)


def _basic_credentials(match: re.Match[str]) -> bool:
    """``Basic`` is followed by base64 of ``user:password`` (so ``Basic authentication`` is prose)."""
    try:
        decoded = binascii.a2b_base64(match.group("value"), strict_mode=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return False
    return decoded.find(":") > 0 and decoded.isprintable()


_TABLE: tuple[_Pattern, ...] = (
    _Pattern(
        "private_key",
        "a private key block",
        ("private key",),
        # Up to the END line, or to the end of the text when it is cut off.
        _compile(_PEM.format("BEGIN ") + r"(?:[\s\S]*?" + _PEM.format("END ") + r"|[\s\S]*)"),
    ),
    _Pattern(
        "jwt",
        "a JSON Web Token",
        ("eyj",),
        _compile(
            _words(("eyJ",), run=_BASE64URL) + rf"[{_BASE64URL}]{{8,}}+\.[{_BASE64URL}]{{8,}}+\.[{_BASE64URL}]{{8,}}+"
        ),
    ),
    _Pattern(
        "sk_api_key",
        "an API key in the 'sk-' format (OpenAI, Anthropic, DeepSeek, ...)",
        ("sk-",),
        _compile(_words(("sk-",), run=_BASE64URL) + rf"[{_BASE64URL}]{{16,}}+"),
        _when(_random_segment),
    ),
    _Pattern(
        "github_token",
        "a GitHub token",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        _compile(
            _words(("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), run="A-Za-z0-9") + "[A-Za-z0-9]{30,}+"
            "|" + _words(("github_pat_",), run="A-Za-z0-9_") + "[A-Za-z0-9_]{30,}+"
        ),
    ),
    _Pattern(
        "gitlab_token",
        "a GitLab token",
        ("glpat-", "gldt-", "glrt-"),
        _compile(_words(("glpat-", "gldt-", "glrt-"), run=_BASE64URL) + rf"[{_BASE64URL}]{{20,}}+"),
    ),
    _Pattern(
        "aws_access_key",
        "an AWS access key id",
        ("akia", "asia", "abia", "acca"),
        _compile(_words(("AKIA", "ASIA", "ABIA", "ACCA"), run="A-Z0-9") + "[A-Z0-9]{16}(?![A-Z0-9])"),
    ),
    _Pattern(
        "aws_secret_key",
        "an AWS secret access key",
        ("akia", "asia", "secret access key"),
        # Right after its key id (a credentials CSV, a pasted pair) or after the prompt of
        # ``aws configure``; ``aws_secret_access_key = …`` is a secret name's value.
        _compile(
            "(?:"
            + _words(("AKIA", "ASIA"), run="A-Z0-9")
            + r"""[A-Z0-9]{16}\\?["']?[ \t,:;=|]{1,8}\\?["']?"""
            + "|"
            + _words(("secret access key",), fold=True)
            + r"(?:[ \t]{0,8}\[[^\]\r\n]{0,64}\])?[ \t]{0,8}:[ \t]{0,8}"
            + r")(?P<value>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"
        ),
    ),
    _Pattern(
        "slack_token",
        "a Slack token",
        ("xox", "xapp-"),
        _compile(
            _words(("xox",), run="A-Za-z0-9-")
            + "[abposre]-[A-Za-z0-9-]{10,}+|"
            + _words(("xapp-",), run="A-Za-z0-9-")
            + "[A-Za-z0-9-]{10,}+"
        ),
    ),
    _Pattern(
        "google_api_key",
        "a Google API key",
        ("aiza",),
        _compile(_words(("AIza",), run=_BASE64URL) + rf"[{_BASE64URL}]{{35,}}+"),
    ),
    _Pattern(
        "stripe_key",
        "a Stripe key",
        ("_live_", "_test_"),
        _compile(_words(("sk_", "rk_", "pk_"), run="A-Za-z0-9") + "(?:live|test)_[0-9A-Za-z]{16,}+"),
    ),
    _Pattern(
        "huggingface_token",
        "a Hugging Face token",
        ("hf_",),
        _compile(_words(("hf_",), run="A-Za-z0-9") + "[A-Za-z0-9]{30,}+"),
    ),
    _Pattern(
        "npm_token",
        "an npm token",
        ("npm_",),
        _compile(_words(("npm_",), run="A-Za-z0-9") + "[A-Za-z0-9]{36}"),
    ),
    _Pattern(
        "basic_auth",
        "HTTP Basic credentials",
        ("basic",),
        _compile(
            _words(("basic",), fold=True, run=_BASE64URL)
            + r"[ \t]{1,8}(?P<value>[A-Za-z0-9+/]{4,4096}={0,2})(?![A-Za-z0-9+/=])"
        ),
        _when(_basic_credentials),
    ),
    _Pattern(
        "bearer_token",
        "a bearer token",
        ("bearer", "token"),
        _compile(
            "(?P<word>" + _words(("bearer", "token"), fold=True, run=_BASE64URL) + ")"
            r"\s{1,8}(?P<value>[A-Za-z0-9._~+/-]{16,}+={0,4})"
        ),
        _when(_bearer_value),
    ),
    _Pattern(
        "url_password",
        "a password inside a URL",
        ("://",),
        # After a scheme (a letter or digit before ``://``), the user (no brackets: a marker is
        # none), then the password.
        _compile(
            r"://(?<=[A-Za-z0-9+.-]...)(?:[^\s:/@\[\]\\]|\\[^\s:/@nrt]){1,256}:"
            r"(?P<value>(?:[^\s@/\\]|\\[^\s@/nrt]){1,256})@"
        ),
        _when(_is_value),
    ),
    _Pattern(
        "cookie",
        "an HTTP cookie",
        ("cookie",),
        _compile(
            _words(("set-cookie", "cookie"), fold=True, run=_BASE64URL)
            + r"""\\?["']?[ \t]{0,8}:[ \t]{0,8}\\?["']?(?P<value>[^\s=;,"'\\]{1,256}=[^\r\n"'\\]{0,4096})"""
        ),
    ),
    _Pattern(
        "mysql_password",
        "a MySQL password flag (-p<password>, -p <password>)",
        ("mysql", "mariadb"),
        _compile(
            _words(("mysql", "mariadb"), run="A-Za-z0-9_.-")
            + r"(?:dump|admin|import|check|show|sh|-dump|-admin)?"
            + _ARGS
            + r"[ \t]{1,8}-p(?:[ \t]{1,8})?"
            + _OPTION_VALUE
        ),
        _when(_is_value),
    ),
    _Pattern(
        "cli_password",
        "a password given to a command's option (docker login -p, redis-cli -a, sshpass -p)",
        # Few gate words: each one a text lacks costs a scan of it (``login`` stands for the
        # registry clients, all of which the pattern needs with ``login``).
        ("login", "redis-cli", "sshpass"),
        _compile(
            "(?:"
            + _words(("docker", "podman", "nerdctl", "buildah", "skopeo"), run="A-Za-z0-9_.-")
            + _ARGS
            + r"[ \t]{1,8}login"
            + _ARGS
            + r"[ \t]{1,8}-p[ \t]{1,8}"
            + "|"
            + _words(("redis-cli",), run="A-Za-z0-9_.-")
            + _ARGS
            + r"[ \t]{1,8}-a[ \t]{1,8}"
            + "|"
            + _words(("sshpass",), run="A-Za-z0-9_.-")
            + _ARGS
            + r"[ \t]{1,8}-p[ \t]{0,8}"
            + ")"
            + _OPTION_VALUE
        ),
        _when(_is_value),
    ),
    _Pattern(
        "user_password",
        "a password in a user:password option (curl -u)",
        ("curl",),
        _compile(
            _words(("curl",), run="A-Za-z0-9_.-")
            + _ARGS
            + r"""[ \t]{1,8}(?:-u[ \t]{0,8}|--user(?:[ \t]{1,8}|=))\\?["']?(?:[^\s:"'\\]){0,256}:"""
            + r"""(?P<value>(?:[^\s"'\\]|\\[^\s"'nrt]){1,256})"""
        ),
        _when(_is_value),
    ),
    _Pattern(
        "netrc_password",
        "a netrc-style 'login ... password ...' entry",
        ("password",),
        _compile(
            _words(("login",), fold=True, run=_BASE64URL) + r"\s{1,16}\S{1,256}\s{1,16}(?i:password)[ \t]{1,8}" + _VALUE
        ),
        _when(_is_value),
    ),
    _Pattern(
        "secret_flag",
        "a secret given to a --password/--token style flag",
        _NAME_GATES,
        _compile(_NAME + r"(?:[ \t]{1,8}|=)(?!-)"),
        _flag_value,
        named=True,
    ),
    _Pattern(
        "secret_assignment",
        "a secret assigned to a password/secret/token/key name",
        _NAME_GATES,
        _compile(_NAME + r"""\\?["']?[ \t]{0,8}(?:={1,3}>?|:=)[ \t]{0,8}"""),
        _assigned_value,
        named=True,
    ),
    _Pattern(
        "secret_label",
        "a secret labelled as a password/secret/token/key",
        _NAME_GATES,
        _compile(_NAME + r"""\\?["']?[ \t]{0,8}:(?![:=])[ \t]{0,8}"""),
        _labelled_value,
        named=True,
    ),
)

DESCRIPTIONS = MappingProxyType({pattern.name: pattern.description for pattern in _TABLE})
"""Pattern name -> what it is, worded for a message (``"a GitHub token"``); in priority order."""

GATE_WORDS: tuple[str, ...] = tuple(
    sorted(
        {gate for p in _TABLE for gate in p.gates if not any(o != gate and o in gate for q in _TABLE for o in q.gates)}
    )
)
"""Lower-case words of which every secret holds one: a text whose ``lower()`` holds none has none."""


# Gate words are looked for by groups: words sharing a head (``pass``, ``gh``, ``gl``: 21 of the
# 47) only once their head is there, and a head only when its two rarest characters (by English
# letter frequency; characters not in the list are rarer still) are: a one-character ``in`` is a
# memchr, and stops at the first one.
# A text without a gate word (most tool output) costs one scan per group, not one per word; in
# one with a head, one regex search reads the character after each place of it (:func:`_words_after`).
_FREQUENT = " etaoinsrhdlucmfywgp-.,bv_/:kxqjz"
_GATE_HEADS = ("pass", "gh", "gl")
_Group: TypeAlias = tuple[str, str, str, tuple[str, ...], re.Pattern[str] | None]


def _rarest(word: str) -> tuple[str, str]:
    """The two rarest distinct characters of ``word`` (the same one twice if it has only one)."""
    chars = sorted(set(word), key=lambda char: _FREQUENT.find(char) % (len(_FREQUENT) + 1), reverse=True)
    return chars[0], chars[1 if len(chars) > 1 else 0]


def _grouped(words: set[str]) -> tuple[_Group, ...]:
    """``(two rarest characters of the head, head, words, the head before a character that
    follows it in a word)`` for each group of ``words``; the pattern is None for a lone word."""
    groups: dict[str, list[str]] = {}
    for word in sorted(words):
        groups.setdefault(next((head for head in _GATE_HEADS if word.startswith(head)), word), []).append(word)
    out: list[_Group] = []
    for head, group in groups.items():
        after = "".join(sorted({word[len(head)] for word in group if word != head}))
        # A head that overlaps itself ("aa") could hide a place of it inside another: no pattern.
        overlaps = any(head.startswith(head[i:]) for i in range(1, len(head)))
        pattern = re.compile(f"{re.escape(head)}(?=([{re.escape(after)}]))") if after and not overlaps else None
        out.append((*_rarest(head), head, tuple(group), pattern))
    return tuple(out)


_GATE_GROUPS = _grouped({g for p in _TABLE for g in p.gates})
_GATE_WORD_GROUPS = _grouped(set(GATE_WORDS))


def _gate_words_in(lower: str) -> set[str]:
    """The gate words (of every pattern) that ``lower`` holds."""
    found: set[str] = set()
    for char, second, head, words, after in _GATE_GROUPS:
        if char in lower and second in lower and head in lower:
            found.update(_words_after(lower, head, words, after))
    return found


def _words_after(lower: str, head: str, words: tuple[str, ...], after: re.Pattern[str] | None) -> list[str]:
    """The ``words`` of a group that ``lower`` holds, ``head`` (their common start) being there.

    Each word would be a scan of the whole text: one search (``after``, led by the head's literal,
    a fast scan) gives the character after every place of the head instead, and only a word
    longer than the head and one character is then looked for, when its start is there.
    """
    if after is None:
        return [word for word in words if word == head or word in lower]
    size = len(head)
    following = set(after.findall(lower))
    return [
        word for word in words if word == head or (word[size] in following and (len(word) == size + 1 or word in lower))
    ]


def may_contain_secret(text: str) -> bool:
    """False when no secret can be found in ``text`` nor in any part of it (no gate word)."""
    lower = text.lower()
    for char, second, head, words, _ in _GATE_WORD_GROUPS:
        if char in lower and second in lower and head in lower and any(word == head or word in lower for word in words):
            return True
    return False


def _span(match: re.Match[str]) -> tuple[int, int]:
    """The value's span, never splitting a backslash escape (a JSON string stays valid)."""
    start, end = match.span(_value_group(match))
    text = match.string
    if _odd_backslashes(text, end):  # the value's last character escapes what follows it
        end -= 1
    if _odd_backslashes(text, start):  # the value starts inside an escape
        start -= 1
    return start, end


def _odd_backslashes(text: str, end: int) -> bool:
    count = 0
    while end - count > 0 and text[end - count - 1] == "\\":
        count += 1
    return count % 2 == 1


def _spans(pattern: _Pattern, text: str) -> Iterator[tuple[int, int]]:
    """The secrets ``pattern`` finds in ``text``; a match its check refuses is skipped by one character."""
    search, check = pattern.regex.search, pattern.check or _span
    position = 0
    while True:
        match = search(text, position)
        if match is None:
            return
        span = check(match)
        if span is not None and span[0] < span[1]:
            yield span
            position = max(match.end(), span[1])
        else:
            position = match.start() + 1


def _named_spans(patterns: list[tuple[int, _Pattern]], text: str, lower: str) -> dict[int, list[tuple[int, int]]]:
    """What :func:`_spans` gives for each of the ``named`` ``patterns`` (by rank), in one scan: they
    share their start (:data:`_NAME`), so each candidate name is found once and each pattern is
    only tried there, anchored, instead of each pattern scanning the text for the same words."""
    found: dict[int, list[tuple[int, int]]] = {rank: [] for rank, _ in patterns}
    resume = dict.fromkeys(found, 0)  # per pattern, where _spans would search next
    # ASCII: lower-casing keeps every offset and folds exactly what the patterns' (?i) folds.
    candidates = _ALL_NAME_CANDIDATES if any(word in lower for word in _RARE_NAME_WORDS) else _NAME_CANDIDATES
    haystack, search = (lower, candidates[1].search) if text.isascii() else (text, candidates[0].search)
    candidate = search(haystack)
    while candidate is not None:
        start = candidate.start()
        for rank, pattern in patterns:
            if start < resume[rank] or (match := pattern.regex.match(text, start)) is None:
                continue
            span = (pattern.check or _span)(match)
            if span is not None and span[0] < span[1]:
                found[rank].append(span)
                resume[rank] = max(match.end(), span[1])
            else:
                resume[rank] = start + 1
        candidate = search(haystack, start + 1)
    return found


def _found(text: str) -> Iterator[tuple[int, list[tuple[int, int]]]]:
    """Each gated pattern's rank and spans, in rank order; the named ones computed together once."""
    lower = text.lower()
    gated = _gated(lower)
    named: dict[int, list[tuple[int, int]]] | None = None
    for rank, pattern in gated:
        if not pattern.named:
            yield rank, list(_spans(pattern, text))
            continue
        if named is None:
            named = _named_spans([(r, p) for r, p in gated if p.named], text, lower)
        yield rank, named[rank]


def _gated(lower: str) -> list[tuple[int, _Pattern]]:
    """The patterns worth running over a text (one of their gate words is in ``lower``, the text
    lower-cased), with their rank."""
    present = _gate_words_in(lower)
    if not present:
        return []
    return [(rank, pattern) for rank, pattern in enumerate(_TABLE) if not present.isdisjoint(pattern.gates)]


def find_secrets(text: str) -> list[SecretMatch]:
    """Every secret value in ``text``, in order; overlapping finds are merged into one span that
    is named after the pattern that comes first in :data:`DESCRIPTIONS`.
    """
    found = sorted((start, end, rank) for rank, spans in _found(text) for start, end in spans)
    merged: list[list[int]] = []
    for start, end, rank in found:
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            last[2] = min(last[2], rank)
        else:
            merged.append([start, end, rank])
    return [SecretMatch(_TABLE[rank].name, start, end) for start, end, rank in merged]


def contains_secret(text: str) -> str | None:
    """The name of the first pattern (in :data:`DESCRIPTIONS` order) that finds a secret in ``text``."""
    for rank, spans in _found(text):
        if spans:
            return _TABLE[rank].name
    return None


def redact(text: str, marker: str = MARKER) -> tuple[str, int]:
    """``text`` with each secret value replaced by ``marker`` (``{name}`` = the pattern), and how
    many were replaced. Names, flags, headers, users and hosts around a value are kept.
    """
    found = find_secrets(text)
    if not found:
        return text, 0
    parts: list[str] = []
    position = 0
    for secret in found:
        parts += (text[position : secret.start], marker.format(name=secret.name))
        position = secret.end
    parts.append(text[position:])
    return "".join(parts), len(found)


# -- credential-looking field names: i_protocol.credentials (no patterns to compile) --------------
