"""The ``recall`` tool: the exact original messages a compaction replaced, from the session's archive.

Read-only and free (no approval, like ``read``). By ``span`` ("12-40" or "12", the numbers a
summary cites) or by ``tool_call_id`` (the assistant message that made the call and its result).
Each message is one line, ``[span N] {JSON}``, exactly as it was in the history; values the secret
table flags are masked (``i_protocol.secrets.redact``). The lines joined by newlines are the
*recalled text*.

The recalled text comes whole, after a header line, when it fits this call's room: the budget's
per-call tool-output bytes (``ToolContext.output_bytes``, what the core cuts every result to) and
``max_output_chars``. Otherwise it comes in *parts*, each within that room, so the core never cuts
one: a header (the character range ``[start, end)`` of the total, ``next offset: M`` or that it is
the last part, the message a part begins or ends inside of), the line ``PART_TEXT``, then that
range of the recalled text exactly. The parts' texts joined in order are the recalled text;
``offset`` (characters) asks for the part that starts there.
"""

from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass
from typing import Any

from i_protocol.history import utf8_len
from i_protocol.jsonsafe import dumps_printable, map_strings

from ..errors import ToolError
from .arguments import Arguments
from .contract import Prepared, ToolContext, ToolResult
from .text import printable

_SPAN = re.compile(r"\s*(\d{1,12})\s*(?:[-\u2013]\s*(\d{1,12})\s*)?")
MAX_SPAN_MESSAGES = 10_000
PART_TEXT = "--- part text ---"
"""The line after a part's header: the part's text follows it, to the end of the output."""


@dataclass(frozen=True)
class _Recalled:
    """What one call recalls: its messages' lines and how to describe and ask for them again."""

    what: str
    """``archived messages 12-40`` or ``archived messages of tool call X``, with any note."""
    again: str
    """The arguments that recall the same text (``span "12-40"``), for the next part."""
    numbers: list[int]
    lines: list[str]
    masked: int


def prepare_recall(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``recall`` call: exactly one of ``span`` and ``tool_call_id``, an optional ``offset``."""
    args = Arguments("recall", arguments, ("span", "tool_call_id", "offset"))
    span = args.optional_string("span")
    call_id = args.optional_string("tool_call_id")
    offset = _offset(args.values.get("offset"))
    if (span is None) == (call_id is None):
        raise ToolError('recall: give exactly one of span (e.g. "12-40") and tool_call_id')
    start = f" from character {offset}" if offset else ""
    if span is not None:
        first, last = _parse_span(span)
        summary = f"recall span {first}-{last}" if last > first else f"recall span {first}"
        return Prepared(
            "recall", dict(args.values), summary + start, run=lambda c: _render(_by_span(first, last, c), offset, c)
        )
    assert call_id is not None
    summary = f"recall tool call {call_id}{start}"
    return Prepared("recall", dict(args.values), summary, run=lambda c: _render(_by_call(call_id, c), offset, c))


def _offset(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(
            "recall: offset must be a whole number of characters (a part's 'next offset'), "
            f"got {printable(repr(value))}"
        )
    if value < 0:
        raise ToolError(f"recall: offset must be 0 or more (characters from the start), got {value}")
    return value


def _parse_span(text: str) -> tuple[int, int]:
    match = _SPAN.fullmatch(text)
    if match is None:
        raise ToolError(f'recall: span must be a message number or a range like "12-40", got {text!r}')
    first = int(match.group(1))
    last = int(match.group(2) or first)
    if first < 1 or last < first:
        raise ToolError(f"recall: span {text!r} is empty; spans count from 1 and run forwards")
    if last - first >= MAX_SPAN_MESSAGES:
        raise ToolError(f"recall: span {text!r} is longer than {MAX_SPAN_MESSAGES} messages; ask for less")
    return first, last


def _numbered(ctx: ToolContext) -> list[tuple[int, dict[str, Any]]]:
    if ctx.archived is None:
        raise ToolError("recall: this session has no archive (nothing has been compacted)")
    found = [
        (generation.first + offset, message)
        for generation in ctx.archived()
        for offset, message in enumerate(generation.messages)
    ]
    if not found:
        raise ToolError("recall: nothing is archived in this session yet (no compaction has replaced messages)")
    return found


def _by_span(first: int, last: int, ctx: ToolContext) -> _Recalled:
    numbered = _numbered(ctx)
    chosen = [(number, message) for number, message in numbered if first <= number <= last]
    if not chosen:
        raise ToolError(f"recall: span {first}-{last} is not in the archive; recallable: {_ranges(numbered)}")
    missing = (last - first + 1) - len(chosen)
    note = f" ({missing} of them are not in the archive; recallable: {_ranges(numbered)})" if missing else ""
    return _recalled(f"archived messages {first}-{last}{note}", f'span "{first}-{last}"', chosen)


def _by_call(call_id: str, ctx: ToolContext) -> _Recalled:
    numbered = _numbered(ctx)
    chosen = [(number, message) for number, message in numbered if _mentions(message, call_id)]
    if not chosen:
        raise ToolError(f"recall: no archived message made or answered tool call {call_id!r}")
    return _recalled(f"archived messages of tool call {call_id}", f"tool_call_id {json.dumps(call_id)}", chosen)


def _mentions(message: dict[str, Any], call_id: str) -> bool:
    if message.get("tool_call_id") == call_id:
        return True
    return any(isinstance(call, dict) and call.get("id") == call_id for call in message.get("tool_calls") or ())


def _recalled(what: str, again: str, chosen: list[tuple[int, dict[str, Any]]]) -> _Recalled:
    lines = []
    masked = 0
    for number, message in chosen:
        shown, count = _masked(message)
        masked += count
        lines.append(f"[span {number}] {dumps_printable(shown).decode('utf-8')}")
    return _Recalled(what, again, [number for number, _message in chosen], lines, masked)


def _render(recalled: _Recalled, offset: int | None, ctx: ToolContext) -> ToolResult:
    text = "\n".join(recalled.lines)
    room = ctx.max_output_chars if ctx.output_bytes is None else min(ctx.max_output_chars, ctx.output_bytes)
    if offset is None:
        whole = "\n".join([f"{recalled.what}:", text, *_masked_note(recalled)])
        if _size(whole) <= room:
            return ToolResult(whole)
        offset = 0
    if offset >= len(text):
        raise ToolError(
            f"recall: offset {offset} is beyond the end: the recalled text is {len(text)} characters "
            f"(offsets 0 to {len(text) - 1})"
        )
    return ToolResult(_part(recalled, text, offset, room))


def _part(recalled: _Recalled, text: str, start: int, room: int) -> str:
    """The part of ``text`` from ``start`` that fits ``room`` bytes with its header."""
    total = len(text)
    starts = _line_starts(recalled.lines)
    # Sized for the longest header any part of this text can have: the numbers no wider than total's.
    widest = _header(recalled, total, total, total, max(recalled.numbers), max(recalled.numbers), last=False)
    fitting = _fitting(text, start, room - _size(widest) - 1)
    if fitting == 0:
        raise ToolError(
            f"recall: this call's tool-output budget ({room} bytes) leaves no room for a part of the recalled "
            "text; ask again when the context has more room (after a compaction)"
        )
    end = start + fitting
    if end < total:
        end = _at_line_end(text, start, end)
    begins = _inside(recalled, starts, start)
    ends = _inside(recalled, starts, end)
    header = _header(recalled, start, end, total, begins, ends, last=end == total)
    return f"{header}\n{text[start:end]}"


def _header(
    recalled: _Recalled, start: int, end: int, total: int, begins: int | None, ends: int | None, *, last: bool
) -> str:
    where = f"{recalled.what}, a part: characters [{start}, {end}) of {total}; "
    if not last:
        where += f"next offset: {end} (recall again with {recalled.again} and offset {end} for the rest)"
    else:
        where += "this is the last part"
    lines = [where]
    if begins is not None:
        lines.append(f"This part begins inside the message of span {begins}; its start is in the part before.")
    if ends is not None:
        lines.append(f"This part ends inside the message of span {ends}; the next part continues it.")
    return "\n".join([*lines, *_masked_note(recalled), PART_TEXT])


def _masked_note(recalled: _Recalled) -> list[str]:
    return [f"[{recalled.masked} value(s) that look like secrets are masked]"] if recalled.masked else []


def _line_starts(lines: list[str]) -> list[int]:
    starts = []
    position = 0
    for line in lines:
        starts.append(position)
        position += len(line) + 1
    return starts


def _inside(recalled: _Recalled, starts: list[int], position: int) -> int | None:
    """The span number of the message ``position`` falls strictly inside of (None: at a message's edge)."""
    index = bisect.bisect_right(starts, position) - 1
    if index < 0 or position == starts[index] or position >= starts[index] + len(recalled.lines[index]):
        return None
    return recalled.numbers[index]


def _at_line_end(text: str, start: int, end: int) -> int:
    """``end``, or just after the last line break before it when that is in the part's second half."""
    if text[end - 1] == "\n" or text[end] == "\n":
        return end  # already at a message's edge
    newline = text.rfind("\n", start, end)
    return newline + 1 if newline >= 0 and newline + 1 > start + (end - start) // 2 else end


def _fitting(text: str, start: int, room: int) -> int:
    """How many characters of ``text`` from ``start`` fit ``room`` UTF-8 bytes (never half a character)."""
    if room <= 0:
        return 0
    chunk = text[start : start + room]  # a character takes at least one byte
    data = chunk.encode("utf-8")  # the recalled text has no lone surrogates (dumps_printable)
    if len(data) <= room:
        return len(chunk)
    return len(data[:room].decode("utf-8", "ignore"))


_size = utf8_len
"""UTF-8 bytes of a text, measured as the core's tool-output budget measures them."""


def _masked(value: Any) -> tuple[Any, int]:
    """``value`` with every string's secrets masked (each string on its own, as the history holds it)."""
    from i_protocol.secrets import redact  # the table compiles on first use, not at the core's start

    count = 0

    def mask(text: str) -> str:
        nonlocal count
        masked, found = redact(text)
        count += found
        return masked

    return map_strings(value, mask), count


def _ranges(numbered: list[tuple[int, dict[str, Any]]]) -> str:
    spans: list[list[int]] = []
    for number, _message in numbered:
        if spans and spans[-1][1] + 1 == number:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(f"{a}-{b}" if b > a else str(a) for a, b in spans)
