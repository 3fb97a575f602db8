"""The ``recall`` tool: the exact original messages a compaction replaced, from the session's archive.

Read-only and free (no approval, like ``read``). By ``span`` ("12-40" or "12", the numbers a
summary cites) or by ``tool_call_id`` (the assistant message that made the call and its result).
Each message comes as one line, ``[span N] {JSON}``, exactly as it was in the history; values the
secret table flags are masked (``i_protocol.secrets.redact``), and the output stays within the
tool-output budget, with a note saying how to ask for the rest.
"""

from __future__ import annotations

import re
from typing import Any

from i_protocol.jsonsafe import dumps_printable, map_strings

from ..errors import ToolError
from .arguments import Arguments
from .contract import Prepared, ToolContext, ToolResult

_SPAN = re.compile(r"\s*(\d{1,12})\s*(?:[-\u2013]\s*(\d{1,12})\s*)?")
MAX_SPAN_MESSAGES = 10_000


def prepare_recall(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``recall`` call: exactly one of ``span`` and ``tool_call_id``."""
    args = Arguments("recall", arguments, ("span", "tool_call_id"))
    span = args.optional_string("span")
    call_id = args.optional_string("tool_call_id")
    if (span is None) == (call_id is None):
        raise ToolError('recall: give exactly one of span (e.g. "12-40") and tool_call_id')
    if span is not None:
        first, last = _parse_span(span)
        summary = f"recall span {first}-{last}" if last > first else f"recall span {first}"
        return Prepared("recall", dict(args.values), summary, run=lambda c: _by_span(first, last, c))
    assert call_id is not None
    return Prepared("recall", dict(args.values), f"recall tool call {call_id}", run=lambda c: _by_call(call_id, c))


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


def _by_span(first: int, last: int, ctx: ToolContext) -> ToolResult:
    numbered = _numbered(ctx)
    chosen = [(number, message) for number, message in numbered if first <= number <= last]
    if not chosen:
        raise ToolError(f"recall: span {first}-{last} is not in the archive; recallable: {_ranges(numbered)}")
    missing = (last - first + 1) - len(chosen)
    note = f" ({missing} of them are not in the archive; recallable: {_ranges(numbered)})" if missing else ""
    return _render(f"archived messages {first}-{last}{note}:", chosen, ctx)


def _by_call(call_id: str, ctx: ToolContext) -> ToolResult:
    numbered = _numbered(ctx)
    chosen = [(number, message) for number, message in numbered if _mentions(message, call_id)]
    if not chosen:
        raise ToolError(f"recall: no archived message made or answered tool call {call_id!r}")
    return _render(f"archived messages of tool call {call_id}:", chosen, ctx)


def _mentions(message: dict[str, Any], call_id: str) -> bool:
    if message.get("tool_call_id") == call_id:
        return True
    return any(isinstance(call, dict) and call.get("id") == call_id for call in message.get("tool_calls") or ())


def _render(header: str, chosen: list[tuple[int, dict[str, Any]]], ctx: ToolContext) -> ToolResult:
    lines = [header]
    used = len(header)
    masked = 0
    for position, (number, message) in enumerate(chosen):
        shown, count = _masked(message)
        masked += count
        text = dumps_printable(shown).decode("utf-8")
        line = f"[span {number}] {text}"
        if used + len(line) + 1 > ctx.max_output_chars:
            rest = chosen[position:]
            if position == 0:
                room = max(ctx.max_output_chars - used - 200, 0)
                lines.append(line[:room] + f" [... message cut at {room} characters of {len(line)}]")
                rest = rest[1:]
            if rest:
                lines.append(
                    f"[output cap of {ctx.max_output_chars} characters reached; the rest: recall with span "
                    f'"{rest[0][0]}-{rest[-1][0]}"]'
                )
            break
        lines.append(line)
        used += len(line) + 1
    if masked:
        lines.append(f"[{masked} value(s) that look like secrets are masked]")
    return ToolResult("\n".join(lines))


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
