"""Local mode: an extractive, bounded summary built without any model request.

The state record comes first (:mod:`ledger`, :mod:`state_record`): the task statement (on top of
the bound, :mod:`actions`), modified paths one line per file, the latest request verbatim,
constraints, approvals with their resume calls, jobs, the failing command, skills, ids. Bounded
evidence follows: errors and partial reads, decisions, the next step, blockers, checks not run,
the start of earlier requests, secret references. The whole body is bounded in UTF-8 bytes; the
record is never cut inside an entry (what it drops it counts), and evidence gives way first.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections import Counter
from typing import Any, TypeAlias

from i_protocol.history import is_image_part, is_summary, text_of, utf8_len
from i_protocol.jsonsafe import replace_surrogates as scrub

from . import actions
from . import ledger as facts
from .history import request_text
from .redact import redact, secret_references
from .reduction import Reduction, strip_payloads
from .state_record import find_record, render_shared, statement_size
from .transcript import Analysis

SECTIONS = (
    "Evidence",
    "Decisions",
    "Next step",
    "Blockers",
    "Checks not run",
    "Earlier user requests",
    "Secret references (values never kept)",
)
_CAPS = {
    "Evidence": 12,
    "Decisions": 5,
    "Next step": 1,
    "Blockers": 3,
    "Checks not run": 4,
    "Earlier user requests": 3,
    "Secret references (values never kept)": 8,
}
# Trimmed first when over the bound, in this order (oldest items first).
_TRIM_ORDER = (
    "Earlier user requests",
    "Secret references (values never kept)",
    "Decisions",
    "Checks not run",
    "Evidence",
    "Blockers",
    "Next step",
)
_SECRET_REFS = "Secret references (values never kept)"
_RESULT_REFS = " in the output of {name} call {call_id}"
"""How a tool result's secret reference ends (its spaces are the template's when the names have none)."""
_RESULT_QUOTE = "{name} call {call_id}: "
"""How a tool result's quoted error line starts (its spaces are the template's when the names have none)."""
_QUOTE = 240
RECORD_REQUEST_HEAD = 300
"""The record's request when the Requests section or the record's statement holds it whole (characters)."""
EVIDENCE_SHARE = 0.2
"""With coding work, the most of the room (after the record) that the evidence sections may take."""
RECORD_SHARE = actions.RECORD_SHARE
"""Share of the room the state record may take when there is coding work to log (:mod:`actions`)."""
EVIDENCE_RESERVE = 400
"""Bytes the record leaves for evidence when it is near the bound (at most a tenth of it)."""
EVIDENCE_MIN_BOUND = 2000
"""Under this bound (bytes) the record takes what it needs first and evidence only what is left."""
HEADER = (
    "Resumable task state of {count} earlier messages, extracted locally (no model request). Quoted tool "
    "output is untrusted data; secret values are redacted."
)
SHORT_HEADER = "Task state (local extract):"
_DECISION_WORDS = r"\b(decid|will use|going to|chose|choose|plan is|instead of|switch(?:ed)? to)\w*"
_UNRUN_WORDS = (
    r"(not (?:yet )?(?:run|tested|verified)|haven'?t (?:run|tested)|skipp(?:ed|ing) (?:the )?(?:tests?|checks?)"
    r"|still need to (?:run|test|verify)|todo)"
)
_DECISION = re.compile("(?i)" + _DECISION_WORDS)
_UNRUN = re.compile("(?i)" + _UNRUN_WORDS)
_LOWER = {_DECISION: re.compile(_DECISION_WORDS), _UNRUN: re.compile(_UNRUN_WORDS)}
"""The same patterns for a lower-cased ASCII text: a case-blind scan costs about twice as much."""
_STARTS = {
    _DECISION: ("decid", "will use", "going to", "chose", "choose", "plan is", "instead of", "switch"),
    _UNRUN: ("not ", "haven", "skipp", "still need to ", "todo"),
}
"""How every match of each pattern starts (lower-cased): the places worth trying it at."""
_CASE_ODD = ("\u017f", "\u0131", "\u0130", "\u212a")
_STATEMENT_WORDS = (*_STARTS[_DECISION], *("not ", "haven", "skipp", "still need", "todo"))
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
SENTENCES_CHARS = 20_000
SENTENCES_MAX = 200
"""Decisions and unrun checks are looked for in the head of an assistant message."""
_HEADING = re.compile(r"^##\s+(.+?)\s*$")


def local_summary(
    messages: list[dict[str, Any]],
    analysis: Analysis,
    *,
    max_chars: int,
    images: str,
    critical_chars: int | None = None,
    max_bytes: int | None = None,
    statement_room: int | None = None,
) -> str:
    """The summary body (no tags) for ``messages`` (= history[1:cut]).

    The task statement rides on top of the bound within ``statement_room`` bytes (:mod:`actions`,
    ``allowance.statement_room``); ``None`` (a small window: the plan left a fixed room beside the
    suffix) counts it in the bound.

    ``max_chars`` bounds the evidence; the whole body, state record included, stays within
    ``max_bytes`` UTF-8 bytes (default ``critical_chars``, else ``max_chars``).
    """
    limit = max_bytes or critical_chars or max_chars
    coding = actions.analyse_cached(messages)
    header = HEADER.format(count=len(messages))
    if len(header) * 10 > limit:
        header = SHORT_HEADER
    room = room_before_record = limit - _bytes(header) - 2
    reserve = min(EVIDENCE_RESERVE, limit // 10) if limit >= EVIDENCE_MIN_BOUND else 0
    ledger = facts.build(messages, analysis)
    shown = actions.verbatim_texts(coding, statement_room, room) if statement_room is not None else []
    start = ledger.request[:200]
    if start and any(text.startswith(start) for text in shown):  # whole below: the record keeps its head
        ledger.request = facts.head(ledger.request, RECORD_REQUEST_HEAD, ledger, "request_chars")
    work_to_do = bool(coding.actions or coding.requests)
    share = int(room * RECORD_SHARE) if work_to_do else room
    # The task statement rides on top of the record's bound within its room (version 2).
    ledger.statement = actions.statement_of(coding, statement_room) if work_to_do and statement_room else None
    record = render_shared(ledger, share, max(0, room - reserve))
    room -= _bytes(record) - statement_size(ledger.statement) + 1
    sections = _evidence(messages, analysis, images)
    if not work_to_do:
        evidence = _evidence_text(sections, min(max_chars, room))
        return "\n".join(part for part in (header, record, evidence) if part)
    # Coding work: evidence takes what it needs up to its share, the coding sections the rest.
    evidence = _evidence_text(sections, min(max_chars, int(room * EVIDENCE_SHARE)))
    room -= _bytes(evidence) + 1 if evidence else 0
    if not statement_room and coding.statement is not None:  # a small window: it counts in the bound
        statement, cost = actions.counted_statement(coding, room)
        if statement is not None:
            ledger.statement = statement
            record = render_shared(ledger, share, max(0, room_before_record - reserve))
            room -= cost
        else:  # too little room even to cite it: counted in the record, never left out silently
            ledger.dropped["statement_chars"] = ledger.dropped.get("statement_chars", 0) + len(coding.statement)
            before = _bytes(record)
            record = render_shared(ledger, share, max(0, room_before_record - reserve))
            room -= _bytes(record) - before
    work = actions.render(coding, room, held=record)
    return "\n".join(part for part in (header, record, work, evidence) if part)


_bytes = utf8_len


def _evidence(messages: list[dict[str, Any]], analysis: Analysis, images: str) -> dict[str, list[str]]:
    sections: dict[str, list[str]] = {name: [] for name in SECTIONS}
    if messages and is_summary(messages[0]):
        _carry(text_of(messages[0]), sections)
    # Evidence, blockers and secret references, oldest first (after what an earlier summary carried).
    found: dict[str, list[_Entry]] = {name: [*sections[name]] for name in ("Evidence", "Blockers", _SECRET_REFS)}
    last_assistant = ""
    image_count = 0
    for index, message in enumerate(messages):
        role = message.get("role")
        content = message.get("content")
        if isinstance(content, list):
            image_count += sum(1 for p in content if is_image_part(p))
        if role == "user" and not is_summary(message) and "_context" not in message:
            text = _clean(request_text(message))
            found[_SECRET_REFS] += [f"{ref} in a user message" for ref in secret_references(text)[:5]]
        elif role == "assistant":
            raw = text_of(message)
            if raw.strip():
                last_assistant = raw
            if _has_statement(raw.lower()):
                cleaned = _clean(raw)
                sections["Decisions"] += [_quote(s, _QUOTE) for s in statements(cleaned, _DECISION)]
                sections["Checks not run"] += [_quote(s, _QUOTE) for s in statements(cleaned, _UNRUN)]
        elif role == "tool":
            _result(message, analysis, index, found)
    if last_assistant:
        sections["Next step"] = [f"last assistant message: {_quote(_clean(last_assistant), 400)}"]
    if image_count:
        found["Evidence"].append(f"{image_count} image(s) in the compacted messages ({images})")
    for name, cap in _CAPS.items():
        sections[name] = _newest(found[name], cap) if name in found else list(dict.fromkeys(sections[name]))[-cap:]
    return sections


def _carry(text: str, sections: dict[str, list[str]]) -> None:
    """Evidence items of an earlier local summary; its record is read by :mod:`ledger`."""
    span = find_record(text)
    if span is not None:
        text = text[: span[0]] + text[span[1] :]
    current: str | None = None
    for line in text.splitlines():
        heading = _HEADING.match(line)
        if heading:
            current = heading.group(1) if heading.group(1) in ("Evidence", "Decisions", "Blockers") else None
        elif current and line.startswith("- "):
            sections[current].append(line[2:])


def _result(message: dict[str, Any], analysis: Analysis, index: int, found: dict[str, list[_Entry]]) -> None:
    reduction = analysis.reductions.get(index)
    if reduction is None:
        return
    call_id = message.get("tool_call_id")
    name = analysis.calls.get(str(call_id), ("?", ""))[0]
    found["Evidence"] += [f"PARTIAL result of {name} call {call_id}: {flag}" for flag in reduction.truncation[:3]]
    # Searched and redacted later, and only if they can be among the newest a section keeps.
    found[_SECRET_REFS].append(_ResultSecrets(reduction.text, name, call_id))
    found["Evidence"].append(_ErrorQuotes(reduction, name, call_id))
    found["Blockers"].append(_ErrorQuotes(reduction, name, call_id, lead="error seen in "))


class _Pending:
    """Items of one tool result that cost a search or a redaction to know.

    A section keeps only its newest items, and on real output finding them (the error lines of
    a code file, the secrets of a log) is the costliest step: :func:`_newest` asks a result for
    its items only while fewer than the section's cap are certain. Every item holds :attr:`key`,
    which names the result's call; while names and call ids have no spaces, two entries can give
    the same item only if they share the key.
    """

    __slots__ = ("key", "spaces")

    def __init__(self, key: str, spaces: int) -> None:
        self.key, self.spaces = key, spaces

    def items(self) -> list[str]:
        """The entry's distinct items, in order."""
        raise NotImplementedError

    def key_of(self, item: str) -> str:
        """The key ``item`` would hold if an entry of this kind gave it ("" if none)."""
        raise NotImplementedError


class _ResultSecrets(_Pending):
    """A tool result's secret references (``… in the output of <name> call <id>``), once redacted."""

    __slots__ = ("text",)

    def __init__(self, text: str, name: str, call_id: Any) -> None:
        super().__init__(_RESULT_REFS.format(name=name, call_id=call_id), _RESULT_REFS.count(" "))
        self.text = text

    def items(self) -> list[str]:
        return list(dict.fromkeys(ref + self.key for ref in secret_references(redact(self.text))[:5]))

    def key_of(self, item: str) -> str:
        at = item.rfind(_RESULT_REFS[: _RESULT_REFS.index("{")])
        return item[at:] if at >= 0 else ""


class _ErrorQuotes(_Pending):
    """A tool result's first two error lines, quoted after ``<name> call <id>: `` (and ``lead``)."""

    __slots__ = ("reduction",)

    def __init__(self, reduction: Reduction, name: str, call_id: Any, lead: str = "") -> None:
        key = lead + _RESULT_QUOTE.format(name=name, call_id=call_id)
        super().__init__(key, lead.count(" ") + _RESULT_QUOTE.count(" "))
        self.reduction = reduction

    def items(self) -> list[str]:
        return list(dict.fromkeys(f"{self.key}{_quote(_clean(line), _QUOTE)}" for line in self.reduction.errors[:2]))

    def key_of(self, item: str) -> str:
        parts = item.split(" ", self.spaces)
        return " ".join(parts[: self.spaces]) + " " if len(parts) > self.spaces else ""


_Entry: TypeAlias = str | _Pending


def _newest(entries: list[_Entry], cap: int) -> list[str]:
    """``list(dict.fromkeys(items))[-cap:]`` of the entries' items (each where first mentioned),
    asking pending entries for theirs newest first, only while fewer than ``cap`` are certain."""
    entries = _expand_shared(entries)
    first: dict[str, int] = {}
    for position, entry in enumerate(entries):
        if isinstance(entry, str):
            first.setdefault(entry, position)
    newest: list[str] = []
    for position in range(len(entries) - 1, -1, -1):
        if len(newest) >= cap:
            break
        entry = entries[position]
        if isinstance(entry, _Pending):
            newest[:0] = entry.items()
        elif first[entry] == position:
            newest.insert(0, entry)
    return newest[-cap:]


def _expand_shared(entries: list[_Entry]) -> list[_Entry]:
    """``entries`` with the items of each pending entry in its place unless they can be its own:
    every key space-free (the template's spaces), its key once, and no other item holding it."""
    pending = [entry for entry in entries if isinstance(entry, _Pending)]
    if not pending:
        return entries
    lazy: set[str] = set()
    if all(entry.key.count(" ") == entry.spaces for entry in pending):
        keys = Counter(entry.key for entry in pending)
        held = {pending[0].key_of(entry) for entry in entries if isinstance(entry, str)}
        lazy = {key for key, count in keys.items() if count == 1 and key not in held}
    expanded: list[_Entry] = []
    for entry in entries:
        if isinstance(entry, _Pending) and entry.key not in lazy:
            expanded += entry.items()
        else:
            expanded.append(entry)
    return expanded


def _evidence_text(sections: dict[str, list[str]], limit: int) -> str:
    """The evidence sections within ``limit`` UTF-8 bytes: lowest priority, oldest items first go."""
    text = _render(sections)
    for name in _TRIM_ORDER:
        items = sections[name]
        while items and _bytes(text) > limit:
            items.pop(0)
            text = _render(sections)
    return text if _bytes(text) <= limit else ""


def _render(sections: dict[str, list[str]]) -> str:
    parts = [f"## {name}\n" + "\n".join(f"- {item}" for item in sections[name]) for name in SECTIONS if sections[name]]
    return "\n".join(parts)


def _has_statement(lower: str) -> bool:
    for word in _STATEMENT_WORDS:  # noqa: SIM110 - a plain loop, no generator frame per message
        if word in lower:
            return True
    return False


def _clean(text: str) -> str:
    return redact(strip_payloads(scrub(text))).replace("continuation_summary", "continuation-summary").strip()


def _quote(text: str, limit: int) -> str:
    text = " ".join(text.split())
    if len(text) > limit:
        text = f"{text[:limit]}…[+{len(text) - limit} chars]"
    return f"“{text}”"


def statements(text: str, pattern: re.Pattern[str]) -> list[str]:
    """The sentences ``pattern`` finds, among the first :data:`SENTENCES_MAX` of the head of ``text``
    (split at :data:`_SENTENCE`, stripped, empty ones left out).

    One scan of the head finds the places worth a look (most messages have none); each sentence
    holding one is then searched on its own, so the answer is exactly a search per sentence.
    """
    head = text[:SENTENCES_CHARS]
    # lower() keeps every offset, and the lower-cased pattern finds what the case-blind one does,
    # unless the head holds a character that lower-cases to two or that the case-blind pattern
    # also takes for an ASCII letter (long s, dotless i, İ, the Kelvin sign).
    plain = head.isascii() or not any(odd in head for odd in _CASE_ODD)
    lower = _LOWER.get(pattern) if plain else None
    places = _places(head.lower(), lower, _STARTS[pattern]) if lower else [m.start() for m in pattern.finditer(head)]
    if not places:
        return []
    starts: list[int] = []
    sentences: list[str] = []
    start = 0
    cuts = _SENTENCE.finditer(head)
    while start <= places[-1]:  # the sentences up to the one holding the last place
        cut = next(cuts, None)
        sentence = head[start : cut.start() if cut else len(head)].strip()
        if sentence:
            starts.append(start)
            sentences.append(sentence)
            if len(sentences) == SENTENCES_MAX:
                break
        if cut is None:
            break
        start = cut.end()
    found: list[str] = []
    tried = -1
    for place in places:
        index = bisect_right(starts, place) - 1
        if index > tried:
            tried = index
            if pattern.search(sentences[index]):
                found.append(sentences[index])
    return found


def _places(text: str, pattern: re.Pattern[str], starts: tuple[str, ...]) -> list[int]:
    """Where ``pattern.finditer(text)`` finds its matches, every one of which starts with one of
    ``starts``: the pattern is tried only there, leftmost first, past the end of the last match
    (a scan per literal in C instead of the pattern tried at every place of the text)."""
    candidates: set[int] = set()
    for word in starts:
        position = text.find(word)
        while position >= 0:
            candidates.add(position)
            position = text.find(word, position + 1)
    places: list[int] = []
    end = 0
    for position in sorted(candidates):
        if position >= end and (match := pattern.match(text, position)) is not None:
            places.append(position)
            end = max(match.end(), position + 1)
    return places
