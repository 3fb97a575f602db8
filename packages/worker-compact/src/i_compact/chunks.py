"""Summaries in parts: a prepared transcript too large for one summary request, split in chunks.

The core sends each chunk as its own summary request: ``system`` = the chunk's prompt, ``user``
= the summary so far (``<summary_so_far>…</summary_so_far>``, from the second chunk on) plus the
untrusted transcript of the chunk's messages. The last reply is the summary.

Sizing (from what ``compact_plan`` saw in ``budget_result``, kept in ``state.request``): a request
holds ``capacity - output_reserve (the summary so far) - prompt tokens - 64`` tokens of
transcript, converted to UTF-8 bytes with ``tokens_per_byte`` (1 token per byte when the budget
gave no rate). A message is counted as the UTF-8 bytes of its role, content, ``tool_call_id`` and
tool calls (id, name, arguments) plus :data:`MESSAGE_FRAMING_BYTES`; a chunk adds
:data:`CHUNK_WRAPPER_BYTES` for the core's transcript and summary-so-far wrappers.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .config import check_prompt

FRAME_MARGIN_TOKENS = 64
MESSAGE_FRAMING_BYTES = 48
CALL_FRAMING_BYTES = 32
CHUNK_WRAPPER_BYTES = 512
MIN_CHUNK_BYTES = 2048
"""A summary request with room for less transcript than this cannot make progress."""
_MARKER = "[... {count} chars omitted ...]"
_MARKER_BYTES = 64
_CONTENT_FLOOR = 512
_CALLS_MARKER = "[... {count} more tool calls omitted ...]"

UPDATE_NOTE = """

This request continues a summary made in parts. The user message starts with the summary so far,
between <summary_so_far> and </summary_so_far>: the summary of the earlier parts of the same
transcript. The transcript after it is the NEXT part. Update the summary so far with this part:
keep every fact it records that still holds, under the same rules and sections as above (ids
with their status, resume calls character for character, modified paths, what the user allowed
or forbade, the latest user request, pending work, blockers, checks not run), add what the new
part says, and replace what it supersedes. Answer with the complete updated summary, not only
the changes, inside exactly one block:
<continuation_summary>
...
</continuation_summary>
"""


def utf8_len(text: str) -> int:
    """UTF-8 bytes of ``text`` (lone surrogates counted as 3 bytes)."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


@dataclass(frozen=True)
class RequestBudget:
    """What a summary request may hold: the budget's capacity, reserve and counting rate."""

    capacity: int
    output_reserve: int
    tokens_per_byte: float

    def as_state(self) -> dict[str, Any]:
        return {
            "capacity": self.capacity,
            "output_reserve": self.output_reserve,
            "tokens_per_byte": self.tokens_per_byte,
        }


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def request_budget(value: Any) -> RequestBudget | None:
    """``state.request`` (as ``compact_plan`` stored it) as a :class:`RequestBudget`, or None."""
    if not isinstance(value, dict):
        return None
    capacity, reserve, rate = value.get("capacity"), value.get("output_reserve"), value.get("tokens_per_byte")
    if not _count(capacity) or not _count(reserve):
        return None
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not math.isfinite(rate) or rate <= 0:
        rate = 1.0
    return RequestBudget(capacity, reserve, float(rate))


def transcript_limit(budget: RequestBudget, prompt: str, *, summary_so_far: bool = True) -> tuple[int, int]:
    """``(tokens, bytes)`` of transcript one summary request with ``prompt`` may hold.

    ``summary_so_far``: the request also carries the summary of the earlier chunks, which may
    be as long as a reply (``output_reserve``); the first request carries none.
    """
    prompt_tokens = math.ceil(utf8_len(prompt) * budget.tokens_per_byte)
    carried = budget.output_reserve if summary_so_far else 0
    tokens = budget.capacity - carried - prompt_tokens - FRAME_MARGIN_TOKENS
    if tokens <= 0:
        return tokens, 0
    limit = math.floor(tokens / budget.tokens_per_byte)
    while limit > 0 and math.ceil(limit * budget.tokens_per_byte) > tokens:
        limit -= 1  # floating point must never round a chunk over its limit
    return tokens, limit


def update_prompt(prompt: str) -> str:
    """The prompt of the second and later chunks: the normal prompt plus the update note."""
    return check_prompt(prompt + UPDATE_NOTE, "the prompt plus the chunk-update note")


def _call_bytes(call: Any) -> int:
    if not isinstance(call, dict):
        return CALL_FRAMING_BYTES
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    size = CALL_FRAMING_BYTES
    for value in (call.get("id"), function.get("name"), function.get("arguments")):
        if isinstance(value, str):
            size += utf8_len(value)
    return size


def message_bytes(message: dict[str, Any]) -> int:
    """What one prepared message counts for in a chunk (see the module docstring)."""
    size = MESSAGE_FRAMING_BYTES
    for key in ("role", "content", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str):
            size += utf8_len(value)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        size += sum(_call_bytes(call) for call in calls)
    return size


def transcript_bytes(messages: list[dict[str, Any]]) -> int:
    """What ``messages`` count for as one chunk (wrapper included)."""
    return CHUNK_WRAPPER_BYTES + sum(message_bytes(m) for m in messages)


def cut_middle(text: str, keep: int, *, head_lines: int = 0) -> str:
    """``text`` cut to about ``keep`` UTF-8 bytes: head and tail around an omission marker.

    ``head_lines`` leading lines and the last line are kept whole (a tool result's header and
    the fences of its untrusted quote), even if that goes over ``keep``.
    """
    raw = text.encode("utf-8", "surrogatepass")
    if len(raw) <= keep:
        return text
    head_size = max(keep // 2, 0)
    tail_size = max(keep - head_size, 0)
    if head_lines:
        position = -1
        for _ in range(head_lines):
            position = raw.find(b"\n", position + 1)
            if position < 0:
                break
        if position >= 0:
            head_size = max(head_size, position + 1)
        last = raw.rfind(b"\n")
        if last >= 0:
            tail_size = max(tail_size, len(raw) - last)
    if head_size + tail_size >= len(raw):
        head_size = min(head_size, len(raw))
        tail_size = max(0, len(raw) - head_size)
    head = raw[:head_size].decode("utf-8", "ignore")
    tail = raw[len(raw) - tail_size :].decode("utf-8", "ignore") if tail_size else ""
    omitted = len(text) - len(head) - len(tail)
    if omitted <= 0:
        return text
    return f"{head}\n{_MARKER.format(count=omitted)}\n{tail}"


def shrink(message: dict[str, Any], limit: int) -> dict[str, Any]:
    """``message`` shortened so that :func:`message_bytes` is at most ``limit``.

    Content first (head and tail kept, a tool result's header and quote fences whole), then the
    tool-call arguments evenly, then whole tool calls from the end; each cut says how much went.
    """
    if message_bytes(message) <= limit:
        return message
    out = dict(message)
    raw = out.get("content")
    content = raw if isinstance(raw, str) else ""
    other = message_bytes(out) - utf8_len(content)
    room = limit - other - _MARKER_BYTES
    if room < 0:
        room = min(_CONTENT_FLOOR, utf8_len(content))  # the tool calls are the bulk: they go next
    if content and utf8_len(content) > room:
        out["content"] = cut_middle(content, room, head_lines=2 if out.get("role") == "tool" else 0)
    listed = out.get("tool_calls")
    calls: list[Any] = listed if isinstance(listed, list) else []
    if message_bytes(out) > limit and calls:
        excess = message_bytes(out) - limit
        arguments = [_arguments(call) for call in calls]
        total = sum(utf8_len(a) for a in arguments)
        share = max(0, (total - excess) // len(calls) - _MARKER_BYTES)
        out["tool_calls"] = [
            _with_arguments(call, cut_middle(a, share)) if utf8_len(a) > share else call
            for call, a in zip(calls, arguments, strict=True)
        ]
    if message_bytes(out) > limit and calls:
        kept: list[Any] = []
        base = dict(out, tool_calls=[])
        base["content"] = f"{out.get('content') or ''}\n{_CALLS_MARKER.format(count=len(calls))}"
        size = message_bytes(base)
        for call in out["tool_calls"]:
            if size + _call_bytes(call) > limit:
                break
            kept.append(call)
            size += _call_bytes(call)
        dropped = len(calls) - len(kept)
        out = dict(out, tool_calls=kept)
        out["content"] = f"{out.get('content') or ''}\n{_CALLS_MARKER.format(count=dropped)}"
        if not kept:
            out.pop("tool_calls")
    if message_bytes(out) > limit:
        out.pop("tool_calls", None)
        out["content"] = _MARKER.format(count=len(content))
    return out


def _arguments(call: Any) -> str:
    function = call.get("function") if isinstance(call, dict) else None
    arguments = function.get("arguments") if isinstance(function, dict) else None
    return arguments if isinstance(arguments, str) else ""


def _with_arguments(call: dict[str, Any], arguments: str) -> dict[str, Any]:
    return {**call, "function": {**call["function"], "arguments": arguments}}


@dataclass
class Split:
    """Chunks of messages, each within its limit as :func:`transcript_bytes` counts them."""

    chunks: list[list[dict[str, Any]]]
    sizes: list[int]
    limits: list[int]
    shortened: int = 0
    batches_split: int = 0
    notes: list[str] = field(default_factory=list)


def _units(messages: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """``(start, end)`` spans: an assistant message with tool calls and its results stay together."""
    units: list[tuple[int, int]] = []
    index = 0
    while index < len(messages):
        end = index + 1
        if messages[index].get("role") == "assistant" and messages[index].get("tool_calls"):
            while end < len(messages) and messages[end].get("role") == "tool":
                end += 1
        units.append((index, end))
        index = end
    return units


def split(messages: list[dict[str, Any]], first: int, later: int) -> Split:
    """Pack ``messages`` in order into chunks: the first at most ``first`` bytes (wrapper
    included), every later one at most ``later`` bytes (it also carries the summary so far)."""
    sizes = [message_bytes(m) for m in messages]
    result = Split(chunks=[], sizes=[], limits=[])
    current: list[dict[str, Any]] = []
    used = CHUNK_WRAPPER_BYTES
    limit = first

    def flush() -> None:
        nonlocal current, used, limit
        if current:
            result.chunks.append(current)
            result.sizes.append(used)
            result.limits.append(limit)
            limit = later
        current, used = [], CHUNK_WRAPPER_BYTES

    for start, end in _units(messages):
        total = sum(sizes[start:end])
        if used + total <= limit:
            current.extend(messages[start:end])
            used += total
            continue
        if CHUNK_WRAPPER_BYTES + total <= later:
            flush()
            current.extend(messages[start:end])
            used += total
            continue
        # The batch alone is larger than a chunk: correctness of size wins over keeping it whole.
        if end - start > 1:
            result.batches_split += 1
        for index in range(start, end):
            message, size = messages[index], sizes[index]
            if used + size > limit:
                flush()
            cap = limit - CHUNK_WRAPPER_BYTES
            if size > cap:
                message = shrink(message, cap)
                size = message_bytes(message)
                result.shortened += 1
            current.append(message)
            used += size
    flush()
    return result
