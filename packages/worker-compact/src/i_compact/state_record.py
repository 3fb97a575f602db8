"""The state record: a ledger written verbatim into a summary and read back strictly (issue 17).

Version 2, inside the summary block (the README's "State record" section is the reference)::

    <state_record version="2" digest="<16 hex digits>">
    statement: <the task statement, whole; or its head>
    statement_cut: <N> characters of the task statement not written here are in message [<n>] of <span>
    statement_tail: <its tail>
    request: <the latest user request, verbatim>
    constraint: <a sentence the user wrote>
    approval: <approval id (attributes): resume = <the exact call>>
    job: <protocol id> (<status>)[; check: <the call that looks it up again>]
    path: <modified path> (<operation> x<count>, ...)
    failed: <command> (exit <code>)
    skill: <loaded skill>
    fact: <a tool-declared retention fact>
    id: <ids and paths the user, the agent or a tool call named, space-separated>
    data: <ids only tool output named, as whole quoted values, space-separated>
    seen: <ids tool output named in passing (logs, file bodies), space-separated>
    recover: workspace_inspect {"action":"changes"}     (only when approvals or jobs were dropped)
    dropped: <kind>=<count> ...
    </state_record>

One entry per line (ids and data packed several to a line, at most 100 characters: they hold
no spaces), kinds in this order, oldest first within a kind. A value of several lines is
written ``kind+N: first line`` followed by its N further lines exactly as they are, so a
request keeps its whitespace and a resume call its bytes. The digest is the first 16 hex digits
of SHA-256 over the lines between header and close, joined by ``\\n``: a record whose digest,
header, kind, line count or shape is off is not ours, and :func:`parse_record` refuses it (the
caller then treats the text as an untrusted summary).

The task statement (issue 30) is the first real user message after the secret table's masking:
one ``statement`` entry when it fits its room, else its head and tail verbatim with the middle
cited as data by a ``statement_cut`` line (how many characters, which message of which span: no
tool is named); with too little room even for that, the cut line alone (:func:`fit_statement`).
It is in the record because it is state a resumed task must not lose, carried exactly across
generations and out of a summariser's reach. Its room is sized by the caller (``actions``,
``allowance.statement_room``: the room version 1's ``## Task statement`` section had) and it
rides **on top of** the bound: never counted in it, never in the drop order below.

Version 1 (no statement kinds; the statement was a ``## Task statement`` section beside the
record, read back by ``actions``) is read losslessly: the same entries, the same digest. Records
are always written as version 2.

The bound is in UTF-8 bytes. Seen ids take at most a tenth of it (800 bytes at most). Over
it, whole entries go, lowest priority and oldest first (constraints newest first: the ground
rules a user sets first hold for the whole session): seen, data,
ids, facts, finished jobs, skills, the failing command, paths, pending jobs, approvals,
constraints; the latest request, first cut to half of the bound, is shortened last. Every
entry that goes is counted in ``dropped``, summed over generations, so nothing goes silently.
"""

from __future__ import annotations

import hashlib
import re

from i_protocol.history import utf8_len

from .ledger import Ledger, Statement, is_pending, recovery_call

VERSION = "2"
READ = ("1", "2")
"""Versions :func:`parse_record` reads: version 1 (no ``statement`` kinds) as it always was."""
OPEN = "<state_record"
CLOSE = "</state_record>"
_HEADER = re.compile(r'<state_record version="(\d+)" digest="([0-9a-f]{16})">')
_ENTRY = re.compile(r"([a-z_]+)(?:\+(\d+))?: (.*)")
_PATH = re.compile(r"(.+) \(((?:[^\s,()]+ x\d+)(?:, [^\s,()]+ x\d+)*)\)", re.S)
_JOB = re.compile(r"(\S+) \(([^()\n]*)\)(?:; check: .*)?", re.S)
_DROPPED = re.compile(r"[a-z_]+=\d+(?: [a-z_]+=\d+)*")
_CUT = re.compile(
    r"(\d+) characters of the task statement not written here are in "
    r"(?:message \[(\d+)\] of )?(the span this summary replaced|an earlier span)"
)
STATEMENT_KINDS = ("statement", "statement_cut", "statement_tail")
KINDS = (
    *STATEMENT_KINDS,
    "request",
    "constraint",
    "approval",
    "job",
    "path",
    "failed",
    "skill",
    "fact",
    "id",
    "data",
    "seen",
    "recover",
    "dropped",
)
RECOVERY_CALL = 'workspace_inspect {"action":"changes"}'
"""Where dropped approvals and jobs are found again (seed 003's recovery index)."""
# Drop order over the bound (request last: it is shortened, never dropped).
_DROP_ORDER = ("seen", "data", "id", "fact", "finished", "skill", "failed", "path", "job", "approval", "constraint")
SEEN_SHARE = 10
SEEN_MAX = 800
"""Seen ids (named in passing by logs and file bodies) take at most 1/10 of the bound, 800 bytes."""
REQUEST_SHARE = 2
"""The latest request takes at most half of the bound; past that its head stays, with a count."""
PACKED_WIDTH = 100
"""Ids and data are packed several to a line, space-separated, up to this many characters."""


def _fold(kind: str, value: str) -> str:
    """``kind: value``; a value of several lines says how many follow, written as they are."""
    more = value.count("\n")
    return f"{kind}+{more}: {value}" if more else f"{kind}: {value}"


def _digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _size(line: str) -> int:
    return utf8_len(line) + 1


def _entries(ledger: Ledger) -> dict[str, list[tuple[str, str]]]:
    """(key, line) per drop class, oldest first (``key`` names the item in ``dropped``)."""
    jobs = [(i, s) for i, s in ledger.jobs.items()]
    out: dict[str, list[tuple[str, str]]] = {
        "approval": [("approval", _fold("approval", line)) for line in ledger.approvals.values()],
        "job": [("job", _fold("job", _job(i, s))) for i, s in jobs if is_pending(s)],
        "finished": [("job", _fold("job", _job(i, s))) for i, s in jobs if not is_pending(s)],
        "constraint": [("constraint", _fold("constraint", c)) for c in ledger.constraints],
        "path": [("path", _fold("path", _path(p, ops))) for p, ops in ledger.paths.items()],
        "failed": [("failed", _fold("failed", ledger.failure))] if ledger.failure else [],
        "skill": [("skill", _fold("skill", s)) for s in ledger.skills],
        "fact": [("fact", _fold("fact", f)) for f in ledger.facts],
        "id": [("id", i) for i in ledger.ids],
        "data": [("data", d) for d in ledger.data],
        "seen": [("seen", d) for d in ledger.seen],
    }
    return out


def _packed(kind: str, tokens: list[str]) -> list[str]:
    """``kind: a b c`` lines of at most :data:`PACKED_WIDTH` characters (ids hold no spaces)."""
    lines: list[str] = []
    for token in tokens:
        if lines and len(lines[-1]) + 1 + len(token) <= PACKED_WIDTH:
            lines[-1] += " " + token
        else:
            lines.append(f"{kind}: {token}")
    return lines


def _job(ident: str, status: str) -> str:
    call = recovery_call(ident) if is_pending(status) else None
    return f"{ident} ({status})" + (f"; check: {call}" if call else "")


def _path(path: str, ops: dict[str, int]) -> str:
    return f"{path} (" + ", ".join(f"{op} x{count}" for op, count in ops.items()) + ")"


def render(ledger: Ledger, limit: int) -> str:
    """The record of ``ledger`` within ``limit`` UTF-8 bytes (never cut inside an entry), plus its
    task statement: sized by the caller (:func:`fit_statement`), it rides on top of ``limit``."""
    entries = _entries(ledger)
    statement = statement_lines(ledger.statement)
    dropped = dict(ledger.dropped)
    request = ledger.request
    _cap(entries["seen"], min(limit // SEEN_SHARE, SEEN_MAX), dropped)
    over = _size(_fold("request", request)) - limit // REQUEST_SHARE
    if request and over > 0:  # a long request gives way before any id does (2,000 CJK chars are 6 KB)
        request = _shorten(request, over, dropped)
    while True:
        text = _compose(statement, request, entries, dropped)
        over = _size(text) - 1 - limit - sum(map(_size, statement))
        if over <= 0:
            return text
        name = next((n for n in _DROP_ORDER if entries[n]), None)
        if name is None:
            if not request:
                return text  # only the frame and the counts are left: the caller's floor holds them
            request = _shorten(request, over, dropped)
            continue
        freed = 0
        while entries[name] and freed < over:  # a batch: rendering once per entry would be quadratic
            key, line = entries[name].pop(-1 if name == "constraint" else 0)
            dropped[key] = dropped.get(key, 0) + 1
            freed += _size(line)


KEPT_WHOLE = (
    "data",
    "id",
    "fact",
    "finished",
    "skill",
    "failed",
    "path",
    "job",
    "approval",
    "constraint",
    "request_chars",
)
"""What :func:`render_shared` never lets a smaller share drop."""


def render_shared(ledger: Ledger, share: int, limit: int) -> str:
    """The record within ``share`` bytes if that drops only ids, facts and skills, else within ``limit``."""
    text = render(ledger, min(share, limit))
    if share >= limit:
        return text
    full = render(ledger, limit)
    lost = _dropped_counts(text)
    kept = _dropped_counts(full)
    if any(lost.get(kind, 0) > kept.get(kind, 0) for kind in KEPT_WHOLE):
        return full
    return text


def _dropped_counts(text: str) -> dict[str, int]:
    for line in reversed(text.splitlines()):
        if line.startswith("dropped: "):
            pairs = (item.partition("=") for item in line[len("dropped: ") :].split())
            return {kind: int(count) for kind, _, count in pairs if count.isdigit()}
    return {}


def _cap(tokens: list[tuple[str, str]], share: int, dropped: dict[str, int]) -> None:
    """Drop the oldest packed tokens until they take at most ``share`` bytes."""
    total = sum(len(token) + 1 for _, token in tokens)
    while tokens and total > share:
        key, token = tokens.pop(0)
        total -= len(token) + 1
        dropped[key] = dropped.get(key, 0) + 1


def _compose(
    statement: list[str], request: str, entries: dict[str, list[tuple[str, str]]], dropped: dict[str, int]
) -> str:
    lines = [*statement, *([_fold("request", request)] if request else [])]
    by_kind: dict[str, list[str]] = {}
    for name in ("approval", "job", "finished", "path", "failed", "skill", "fact", "constraint"):
        for key, line in entries[name]:
            by_kind.setdefault(key, []).append(line)
    for name in ("id", "data", "seen"):
        by_kind[name] = _packed(name, [token for _, token in entries[name]])
    for kind in KINDS[len(STATEMENT_KINDS) + 1 : -2]:
        lines.extend(by_kind.get(kind, []))
    if dropped.get("approval") or dropped.get("job"):
        lines.append(f"recover: {RECOVERY_CALL}")
    if any(dropped.values()):
        lines.append(_dropped_line(dropped))
    return "\n".join([f'<state_record version="{VERSION}" digest="{_digest(lines)}">', *lines, CLOSE])


def _shorten(request: str, over: int, dropped: dict[str, int]) -> str:
    """The longest head of ``request`` (with its count) whose line is ``over`` bytes shorter."""
    target = _size(_fold("request", request)) - over
    low, high, keep = 1, len(request) - 1, 0
    while low <= high:  # the line grows with the head: the longest that fits, by bisection
        middle = (low + high) // 2
        if _size(_fold("request", _head(request, middle))) <= target:
            keep, low = middle, middle + 1
        else:
            high = middle - 1
    dropped["request_chars"] = dropped.get("request_chars", 0) + len(request) - keep
    return _head(request, keep) if keep else ""


def _head(request: str, keep: int) -> str:
    return f"{request[:keep]}…[{len(request) - keep} more chars not kept]"


def _dropped_line(dropped: dict[str, int]) -> str:
    return "dropped: " + " ".join(f"{kind}={count}" for kind, count in sorted(dropped.items()) if count)


# -- the task statement (version 2) ----------------------------------------------------------


def statement_lines(statement: Statement | None) -> list[str]:
    """The record's lines of ``statement``: ``statement`` (whole, or its head), then, when the
    middle is not held, ``statement_cut`` (what is not written and where it is) and
    ``statement_tail``."""
    if statement is None:
        return []
    if statement.tail is None:
        return [_fold("statement", statement.head)]
    where = "an earlier span" if statement.earlier else "the span this summary replaced"
    message = f"message [{statement.number}] of " if statement.number else ""
    cut = f"statement_cut: {statement.middle} characters of the task statement not written here are in {message}{where}"
    return [
        *([_fold("statement", statement.head)] if statement.head else []),
        cut,
        *([_fold("statement_tail", statement.tail)] if statement.tail else []),
    ]


def statement_size(statement: Statement | None) -> int:
    """UTF-8 bytes the lines of ``statement`` take in a record (newlines included)."""
    return sum(map(_size, statement_lines(statement)))


STATEMENT_HALF_MIN = 32
"""Bytes each of a statement's head and tail keeps at least; with less room, all of it is cited."""


def fit_statement(statement: Statement, limit: int) -> Statement:
    """``statement`` within ``limit`` bytes of record lines: as it is if it fits, else the longest
    head and tail of equal size (their middle cited), else cited whole. Never dropped."""
    if statement_size(statement) <= limit:
        return statement
    head, tail = statement.head, statement.head if statement.tail is None else statement.tail
    length = len(head) + statement.middle + len(tail) if statement.tail is not None else len(head)
    half = (limit - statement_size(Statement(statement.number, "", "", length, statement.earlier))) // 2 - 24
    while half >= STATEMENT_HALF_MIN:
        kept_head = head.encode("utf-8", "surrogatepass")[:half].decode("utf-8", "ignore")
        kept_tail = tail.encode("utf-8", "surrogatepass")[-half:].decode("utf-8", "ignore")
        middle = length - len(kept_head) - len(kept_tail)
        fitted = Statement(statement.number, kept_head, kept_tail, middle, statement.earlier)
        over = statement_size(fitted) - limit
        if over <= 0:
            return fitted
        half -= max(1, (over + 1) // 2)
    return Statement(statement.number, "", "", length, statement.earlier)


def record_version(text: str) -> str | None:
    """The version of the last valid state record of ``text`` (None: no valid record)."""
    found = _valid(text) if OPEN in text else None
    if found is None:
        return None
    header = _HEADER.match(text, found[0])
    return header.group(1) if header is not None else None


# -- reading a record back -----------------------------------------------------------------


def _read(lines: list[str], first: int) -> tuple[int, list[str]] | None:
    """The record whose header is ``lines[first]``: (index of its close line, its entries)."""
    header = _HEADER.fullmatch(lines[first])
    if header is None or header.group(1) not in READ:
        return None
    kinds = KINDS if header.group(1) != "1" else KINDS[len(STATEMENT_KINDS) :]
    out: list[str] = []
    index = first + 1
    while index < len(lines) and lines[index] != CLOSE:
        entry = _ENTRY.fullmatch(lines[index])
        if entry is None or entry.group(1) not in kinds:
            return None
        more = int(entry.group(2) or 0)
        if index + more >= len(lines):
            return None
        out.append(entry.group(1) + ": " + "\n".join([entry.group(3), *lines[index + 1 : index + 1 + more]]))
        index += 1 + more
    if index >= len(lines) or header.group(2) != _digest(lines[first + 1 : index]):
        return None
    return index, out


def _valid(text: str) -> tuple[int, int, list[str]] | None:
    """``(start, end, entries)`` of the last valid record of ``text`` (header at column 0)."""
    lines = text.split("\n")
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line) + 1)
    for first in range(len(lines) - 1, -1, -1):
        if lines[first].startswith(OPEN):
            found = _read(lines, first)
            if found is not None:
                close, out = found
                return offsets[first], offsets[close] + len(CLOSE), out
    return None


def record_text(text: str) -> str | None:
    """The last valid state record of ``text`` as it stands, if any."""
    found = _valid(text) if OPEN in text else None
    return text[found[0] : found[1]] if found is not None else None


def find_record(text: str) -> tuple[int, int] | None:
    """``(start, end)`` of the last valid state record of ``text``."""
    found = _valid(text) if OPEN in text else None
    return (found[0], found[1]) if found is not None else None


_FRAMED = re.compile(r"(?ms)^<state_record\b.*?(?:^</state_record>$|\Z)")


def strip_records(text: str) -> str:
    """``text`` without any state record: valid ones, and any block framed like one (a model may
    not write one)."""
    while (span := find_record(text)) is not None:
        text = (text[: span[0]].rstrip("\n") + "\n" + text[span[1] :].lstrip("\n")).strip("\n")
    return _FRAMED.sub("", text).strip("\n") if OPEN in text else text


def entries(text: str) -> list[str] | None:
    """The entries (``kind: value``, multi-line values whole) of the last valid record, or None."""
    found = _valid(text) if OPEN in text else None
    return found[2] if found is not None else None


def parse_record(text: str) -> Ledger | None:
    """The ledger of the last state record of ``text``; None unless it parses strictly."""
    lines = entries(text)
    if lines is None:
        return None
    ledger = Ledger()
    for line in lines:
        kind, value = line.split(": ", 1)
        if not _apply(ledger, kind, value):
            return None
    return ledger


def _apply(ledger: Ledger, kind: str, value: str) -> bool:
    if kind in STATEMENT_KINDS:
        return _apply_statement(ledger, kind, value)
    if kind == "request":
        ledger.request = value
    elif kind == "constraint":
        ledger.constraints.append(value)
    elif kind == "approval":
        ident = value.removeprefix("approval ").split(" ", 1)[0].split(":", 1)[0]
        ledger.approvals[ident] = value
    elif kind == "job":
        job = _JOB.fullmatch(value)
        if job is None:
            return False
        ledger.jobs[job.group(1)] = job.group(2)
    elif kind == "path":
        path = _PATH.fullmatch(value)
        if path is None:
            return False
        ops = ledger.paths.setdefault(path.group(1), {})
        for part in path.group(2).split(", "):
            op, count = part.rsplit(" x", 1)
            ops[op] = ops.get(op, 0) + int(count)
    elif kind == "failed":
        ledger.failure = value
    elif kind == "recover":
        return value == RECOVERY_CALL  # derived from the counts: nothing to keep
    elif kind == "dropped":
        if not _DROPPED.fullmatch(value):
            return False
        for part in value.split():
            name, count = part.split("=")
            ledger.dropped[name] = int(count)
    elif kind in ("id", "data", "seen"):
        if "\n" in value:
            return False
        getattr(ledger, "ids" if kind == "id" else kind).extend(value.split(" "))
    else:
        getattr(ledger, "skills" if kind == "skill" else "facts").append(value)
    return True


def _apply_statement(ledger: Ledger, kind: str, value: str) -> bool:
    """The statement's lines, strictly in their order: ``statement``, ``statement_cut``,
    ``statement_tail`` (a whole one is one ``statement`` line; one cited whole, one cut line)."""
    held = ledger.statement
    if kind == "statement":
        if held is not None:
            return False
        ledger.statement = Statement(0, value)
        return True
    if kind == "statement_cut":
        cut = _CUT.fullmatch(value)
        if cut is None or (held is not None and held.tail is not None):
            return False
        number, earlier = int(cut.group(2) or 0), cut.group(3) == "an earlier span"
        ledger.statement = Statement(number, held.head if held else "", "", int(cut.group(1)), earlier)
        return True
    if held is None or held.tail != "" or not value:  # a tail follows its cut line, once
        return False
    held.tail = value
    return True
