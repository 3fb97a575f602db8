"""Identifiers a resumed task needs (ids, hashes, call ids, file paths), found by regex passes.

The local summary carries them verbatim in its ``## Identifiers and paths`` section, generation
after generation: an extractive summary quotes only the start of older messages, and the id a
task needs is often further in. The rule (also stated in the README's local-mode section):

* **A path** is a token of ASCII letters, digits and ``_ . + -`` segments joined by ``/`` that
  starts with ``./``, ``../`` or ``~/``, or is absolute with at least two segments
  (``/etc/hosts``, not ``/compact``), or is relative and ends in a file extension (a letter,
  then up to 9 letters or digits: ``src/budget/store.py``, ``.github/workflows/ci.yml``), at
  most 400 characters. ``and/or``, ``12/31/2024``, ``1/2.5`` and URLs are not paths.
* **An id** is a maximal run of ASCII letters, digits, ``-`` and ``_`` (not part of a path, a
  dotted name or a file name: not preceded by ``/ \\ .`` nor followed by ``/ \\`` or
  ``.`` + letter/digit) of 6 to 128 characters that starts and ends with a letter or digit,
  contains a letter and a digit, and either contains ``-`` or ``_`` (``ID-english-12-34dcf2bd``,
  UUIDs, ``tx_0042``, ``PROJ-1234``, ``call_abc123``), or is a hex run of at least 7 characters
  (a sha), or is at least 10 characters of one letter case (a ULID). Not ids: numbers alone
  (``2024``, ``1_000``), short tokens (``v2``, ``utf-8``), words with a version digit
  (``sha256``, ``python3``), a number followed by words (``40-char``, ``2-core``, ``10-20ms``),
  dates (``2024-01-15…``), mixed-case runs without a separator (random keys, base64).
* **Data.** A token in double quotes in message text (``"id": "3fa8…"``, a pasted JSON record)
  is *data*: it is kept like any other, but when the list is over its bound, data goes first.
  The summary writes it in quotes, so the next generation reads the same tier back.
* **Never a secret.** Every text that holds a gate word of the secret table
  (``i_protocol.secrets.GATE_WORDS``: ``key``, ``token``, ``passw``, ``cookie``, …, any case)
  goes through :func:`redact` first (values
  become ``[REDACTED:kind]``, which is no id); a token the table flags is
  dropped (key shapes: ``sk-…``, ``AKIA…``, ``ghp_…``), and so is a token right after a secret
  name (``password hunter2_x1``, ``--token abc_123456``) or right before an ``@`` (the password
  of ``user:pass@host``).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from collections.abc import Iterable
from itertools import accumulate, repeat
from operator import add
from typing import Any

from i_protocol.jsonsafe import replace_surrogates as scrub
from i_protocol.secrets import GATE_WORDS, contains_secret

from .redact import known_gate_free, redact

MAX_ID = 128
MAX_PATH = 400
ARGUMENT_VALUE_MAX = 512
"""Tool-call argument strings scanned: one line, at most this long (names, ids, paths, commands)."""

# A path segment: runs of name characters joined by dots, never ending in one (``x.py.`` at the
# end of a sentence is ``x.py``); possessive, so a long run is never backtracked into.
_SEG = r"\.?[A-Za-z0-9_+-]++(?:\.++[A-Za-z0-9_+-]++)*+"
_FILE = r"\.?[A-Za-z0-9_+-]++(?:\.[A-Za-z0-9_+-]++)*?\.[A-Za-z][A-Za-z0-9]{0,9}"  # ends in an extension
_BODY = (
    r"(?=[A-Za-z_.~+-]*+[0-9/])"  # a digit or a slash in the run: skips plain words at once
    # and a letter (skips numbers at once), or the run is a date
    r"(?:(?=[0-9]{4}-[0-9]{2}-[0-9]{2}(?![A-Za-z0-9_/\\-]|\.[A-Za-z0-9]))|(?=[0-9_.~/+-]*+[A-Za-z]))"
    r"("
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}(?![A-Za-z0-9_/\\-]|\.[A-Za-z0-9])"  # an ISO date, whole
    r"|"
    r"(?=[A-Za-z0-9_-]*[0-9])(?=[A-Za-z0-9_-]*[A-Za-z])[A-Za-z0-9][A-Za-z0-9_-]{2,}[A-Za-z0-9]"  # id candidate
    rf"|(?:\.\.?|~)(?:/{_SEG})+/?"  # ./x, ../x, ~/x
    rf"|(?:/{_SEG}){{2,}}/?"  # absolute, at least two segments
    rf"|(?:{_SEG}/)+{_FILE}"  # relative, with an extension
    r")"
    r"(?![A-Za-z0-9_/\\-]|\.[A-Za-z0-9])"  # the whole run
)
# Matched from the character before the token (a text is scanned with a newline in front): a
# pattern that starts with a character class lets the engine skip to candidate starts in C.
_TOKEN = re.compile(
    r"[^A-Za-z0-9_./\\@-]"  # not inside a longer run, a path, a dotted name or after ``@``
    r'"?' + _BODY + r'(?!"?@)'  # not before an ``@`` (``user:pass@host``, an e-mail address)
)
_QUOTED = re.compile(r'"' + _BODY + r'(?=")')  # a mention in double quotes: data
_NUMBER_WORDS = re.compile(r"[0-9][0-9_-]*[A-Za-z][A-Za-z_-]*")  # 40-char, 2-core, 10-20ms, 3-way-merge
_DATE = re.compile(r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])")
_HEX = re.compile(r"[0-9A-Fa-f]{7,}")
_LETTER = re.compile(r"[A-Za-z]")
# A token right after a secret name, with spaces, ``:``/``=`` or quotes between (a flag value,
# ``password hunter2_x1``): matched in the lower-cased text at each gate word found there.
_AFTER_SECRET_NAME = re.compile(
    r"(?:key|token|passw(?:or)?d?|secret|credentials?|bearer)s?[\"']?[\s:=]*[\"']?" + _BODY.replace("A-Za-z", "a-z")
)
_DATA_URL = re.compile(r"data:[\w/+.-]+;base64,[A-Za-z0-9+/=\s]{16,}")

_VERDICTS: dict[str, bool] = {}
_VERDICTS_MAX = 65536


class Redacted(str):
    """A text :func:`redact` already ran over (the summary's own cleaning): not redacted again."""

    __slots__ = ()


def is_identifier(token: str) -> bool:
    """Whether a token :data:`_TOKEN` matched is an id or path (the rule of the module docstring)."""
    verdict = _VERDICTS.get(token)  # ids and paths repeat across messages: decide each once
    if verdict is None:
        if len(_VERDICTS) >= _VERDICTS_MAX:
            _VERDICTS.clear()
        verdict = _VERDICTS[token] = _decide(token)
    return verdict


def _decide(token: str) -> bool:
    if "/" in token:
        return len(token) <= MAX_PATH and not contains_secret(token)
    if _DATE.fullmatch(token):
        return True  # an ISO date, whole (a timestamp is a longer run: not an id)
    if token.isdigit() or not _LETTER.search(token):
        return False  # numbers alone (1_000_000, 2024-13-45)
    if len(token) > MAX_ID or _DATE.match(token) or (_NUMBER_WORDS.fullmatch(token) and not token.isupper()):
        return False  # a timestamp; a number followed by words (40-char), unless a code in capitals (4XGCCM)
    # Without a separator: a code in capitals (HAT136, EQ1G6C), a sha, or a long single-case id
    # (a ULID). Mixed case is a random key or base64 more often than an id, and a lower-case
    # version word (sha256, python3) is prose.
    if (
        "-" not in token
        and "_" not in token
        and not (token.isupper() or _HEX.fullmatch(token) or (len(token) >= 10 and token.islower()))
    ):
        return False
    return not contains_secret(token)  # verdicts are cached per token (_VERDICTS)


# Words without which no secret can reach a token of a text (the secret table's own gate words):
# a piece holding none of them is not redacted.
_NAME_GATES = GATE_WORDS


def find(text: str) -> list[tuple[str, bool]]:
    """``(token, is_data)`` for each distinct id and path of ``text``, in first-seen order."""
    return _tiers(*_scan([text]))


def scan(pieces: Iterable[str]) -> list[tuple[str, bool]]:
    """``(token, is_data)`` for each distinct id and path of ``pieces``, in first-seen order."""
    return _tiers(*_scan(list(pieces)))


def collect(pieces: Iterable[str]) -> list[str]:
    """The ids and paths of ``pieces`` (message texts, argument strings, earlier ledgers),
    deduplicated in first-seen order, data in quotes.
    """
    return [f'"{token}"' if data else token for token, data in _tiers(*_scan(list(pieces)))]


def _scan(pieces: list[str]) -> tuple[list[str], list[str]]:
    """Every id and path of ``pieces`` in order, and their mentions in double quotes.

    The pieces are scanned as one text: one regex call. A piece holding a gate word is redacted
    first, on its own (an unclosed key block in one message cannot hide the next ones), unless
    it is :class:`Redacted` already, and a token right after a secret name is dropped wherever
    it occurs. The gate words are looked up once, in the joined text.
    """
    joined = "\n" + "\n".join(pieces)
    lower = joined.lower()
    starts = list(accumulate(map(add, map(len, pieces), repeat(1)), initial=1))  # piece i: joined[starts[i]:]
    hits = _gate_hits(pieces, lower, starts) if len(lower) == len(joined) else _finds_all(lower)
    deny: set[str] = set()
    if hits:
        if len(lower) == len(joined):  # positions in the lower-cased text are positions in the pieces
            gated = {bisect_right(starts, hit) - 1 for hit in hits}
        else:  # lower() changed a length ("İ" becomes two characters): look in each piece
            gated = {i for i, piece in enumerate(pieces) if any(word in piece.lower() for word in _NAME_GATES)}
        for hit in hits:
            match = _AFTER_SECRET_NAME.match(lower, hit)
            if match:
                deny.add(match.group(1))
        pieces = list(pieces)
        _redact_pieces(pieces, gated)
        joined = "\n" + "\n".join(pieces)
    joined = scrub(joined)
    if "base64," in joined:
        joined = _DATA_URL.sub(" ", joined)
    get = _VERDICTS.get
    found = [t for t in _TOKEN.findall(joined) if get(t) or (get(t) is None and is_identifier(t))]
    if deny:
        found = [t for t in found if t.lower() not in deny]
    return found, _QUOTED.findall(joined) if '"' in joined else []


def _finds_all(lower: str) -> list[int]:
    """Every place of a gate word in ``lower``."""
    return [hit for word in _NAME_GATES for hit in _finds(lower, word)]


def _gate_hits(pieces: list[str], lower: str, starts: list[int]) -> list[int]:
    """:func:`_finds_all` of ``lower`` (the pieces joined, lower-cased, offsets kept), looked for
    only in the pieces not known to be free of gate words (:func:`known_gate_free`): a gate word
    never holds the newline between two pieces."""
    free = [known_gate_free(piece) for piece in pieces]
    if not any(free):
        return _finds_all(lower)
    hits: list[int] = []
    for index, piece in enumerate(pieces):
        if not free[index]:
            start = starts[index]
            end = start + len(piece)
            hits += [hit for word in _NAME_GATES for hit in _finds(lower, word, start, end)]
    return hits


def _finds(text: str, word: str, start: int = 0, end: int | None = None) -> list[int]:
    """Every position of ``word`` in ``text`` (``str.find``: a C scan)."""
    found = []
    position = text.find(word, start, end)
    while position >= 0:
        found.append(position)
        position = text.find(word, position + len(word), end)
    return found


def _redact_pieces(pieces: list[str], gated: set[int]) -> None:
    """Redact the ``gated`` pieces in place, each on its own (not those already :class:`Redacted`)."""
    for index in gated:
        if not isinstance(pieces[index], Redacted):
            pieces[index] = redact(pieces[index])


def _tiers(found: list[str], quoted: list[str]) -> list[tuple[str, bool]]:
    """Each token once, in first-seen order; data when every mention of it was in quotes."""
    if not quoted:
        return [(token, False) for token in dict.fromkeys(found)]
    counts = Counter(found)  # a dict: first-seen order
    mentions = Counter(quoted)
    return [(token, mentions[token] >= count) for token, count in counts.items()]


def argument_text(parsed: Any) -> str:
    """What of a tool call's decoded arguments is scanned: its one-line strings of at most
    :data:`ARGUMENT_VALUE_MAX` characters (names, ids, paths, commands), at any depth; not file
    bodies, patches or scripts (a write tool's files are in Modified artifacts).
    """
    if isinstance(parsed, str):
        return parsed if len(parsed) <= ARGUMENT_VALUE_MAX and "\n" not in parsed else ""
    values: list[str] = []
    if type(parsed) is dict:  # the usual shape: one level of strings and numbers
        for value in parsed.values():
            kind = type(value)
            if kind is str:
                if len(value) <= ARGUMENT_VALUE_MAX and "\n" not in value:
                    values.append(value)
            elif kind is dict or kind is list:
                break
        else:
            return " ".join(values)
        values = []
    stack = [parsed]
    budget = 256  # values visited per call: arguments are small objects; a huge one is data
    while stack and budget > 0:
        value = stack.pop()
        if isinstance(value, dict):
            stack.extend(reversed(value.values()))
        elif isinstance(value, list):
            stack.extend(reversed(value))
        elif type(value) is str and len(value) <= ARGUMENT_VALUE_MAX and "\n" not in value:
            values.append(value)
        budget -= 1
    return " ".join(values)
