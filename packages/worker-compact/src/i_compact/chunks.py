"""Summaries in parts: a prepared transcript too large for one summary request, split in chunks.

The core sends each chunk as its own summary request: ``system`` = the chunk's prompt, ``user``
= the summary so far (``<summary_so_far>…</summary_so_far>``, from the second chunk on) plus the
untrusted transcript of the chunk's messages. The last reply is the summary.

Sizing (from what ``compact_plan`` saw in ``budget_result``, kept in ``state.request``): a request
holds ``capacity - output_reserve (the summary so far) - prompt tokens - 64`` tokens of
transcript, converted to UTF-8 bytes with ``tokens_per_byte`` (1 token per byte when the budget
gave no rate). A message is counted as the UTF-8 bytes of its role, content, ``tool_call_id`` and
tool calls (id, name, arguments) plus :data:`MESSAGE_FRAMING_BYTES`; a chunk adds what the core's
transcript and summary-so-far wrappers cost: the ``summary_request_overhead`` the core sends in
``before_compact`` (``i_protocol.summary``), or, from a host that sends none, its
``OLDER_CORE_MARGIN`` (the margin this compactor kept before the field).

When the budget's rate is provisional (nothing of the model's density observed yet, so its rate
is the seed's 1 token per byte, several times the real count), chunks are packed by
:func:`estimate_tokens` instead: a content count that stays above what BPE tokenizers count for
ASCII text (a letter run of L letters is ceil(L / 5) tokens; a non-ASCII character counts its UTF-8
bytes, as before). Packing by bytes at 1 token per byte filled about a quarter of each request
(issue 30: 60 requests for a 30-turn prefix in an 8k window).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeGuard

from i_protocol.history import utf8_len
from i_protocol.summary import (
    CONTINUATION_CLOSE,
    CONTINUATION_OPEN,
    OLDER_CORE_MARGIN,
    SUMMARY_SO_FAR_CLOSE,
    SUMMARY_SO_FAR_OPEN,
    Overhead,
)

from .settings import check_prompt

FRAME_MARGIN_TOKENS = 64
MESSAGE_FRAMING_BYTES = 48
CALL_FRAMING_BYTES = 32
MESSAGE_FRAMING_TOKENS = 16
CALL_FRAMING_TOKENS = 16
"""The same framing counted in tokens (by estimate: a provisional rate): a message's ``[role]``
line is a few tokens."""
MIN_CHUNK_BYTES = 2048
"""A summary request with room for less transcript than this cannot make progress."""
_MARKER = "[... {count} chars omitted ...]"
_MARKER_BYTES = 64
_CONTENT_FLOOR = 512
_CALLS_MARKER = "[... {count} more tool calls omitted ...]"

UPDATE_NOTE = f"""

This request continues a summary made in parts. The user message starts with the summary so far,
between {SUMMARY_SO_FAR_OPEN} and {SUMMARY_SO_FAR_CLOSE}: the summary of the earlier parts of the same
transcript. The transcript after it is the NEXT part. Update the summary so far with this part:
keep every fact it records that still holds, under the same rules and sections as above (ids
with their status, resume calls character for character, modified paths, what the user allowed
or forbade, the latest user request, pending work, blockers, checks not run), add what the new
part says, and replace what it supersedes. Answer with the complete updated summary, not only
the changes, inside exactly one block:
{CONTINUATION_OPEN}
...
{CONTINUATION_CLOSE}
"""


@dataclass(frozen=True)
class RequestBudget:
    """What a summary request may hold: the budget's capacity, reserve and counting rate."""

    capacity: int
    output_reserve: int
    tokens_per_byte: float
    provisional: bool = False
    """The rate is the budget's provisional one: chunks are packed by :func:`estimate_tokens`."""
    overhead: Overhead = OLDER_CORE_MARGIN
    """What the core's wrapper costs in each request (``before_compact``'s ``summary_request_overhead``)."""

    def as_state(self) -> dict[str, Any]:
        state: dict[str, Any] = {
            "capacity": self.capacity,
            "output_reserve": self.output_reserve,
            "tokens_per_byte": self.tokens_per_byte,
        }
        if self.provisional:
            state["provisional"] = True
        return state

    def size(self, message: dict[str, Any]) -> int:
        """What ``message`` counts for in a chunk, in this budget's unit (bytes, or estimated tokens)."""
        return message_tokens(message) if self.provisional else message_bytes(message)

    @property
    def wrapper(self) -> int:
        """What the core's wrappers count for in a chunk, in this budget's unit."""
        return self.overhead.tokens if self.provisional else self.overhead.bytes

    def transcript_size(self, messages: list[dict[str, Any]]) -> int:
        """What ``messages`` count for as one chunk (wrapper included), in this budget's unit."""
        return self.wrapper + sum(self.size(m) for m in messages)


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def request_budget(value: Any, overhead: Overhead = OLDER_CORE_MARGIN) -> RequestBudget | None:
    """``state.request`` (as ``compact_plan`` stored it) as a :class:`RequestBudget`, or None;
    ``overhead`` is what ``before_compact`` said the core's wrapper costs."""
    if not isinstance(value, dict):
        return None
    capacity, reserve, rate = value.get("capacity"), value.get("output_reserve"), value.get("tokens_per_byte")
    if not _count(capacity) or not _count(reserve):
        return None
    if not isinstance(rate, (int, float)) or isinstance(rate, bool) or not math.isfinite(rate) or rate <= 0:
        rate = 1.0
    return RequestBudget(capacity, reserve, float(rate), value.get("provisional") is True, overhead)


def transcript_limit(budget: RequestBudget, prompt: str, *, summary_so_far: bool = True) -> tuple[int, int]:
    """``(tokens, size)`` of transcript one summary request with ``prompt`` may hold; ``size`` is in
    the budget's unit (UTF-8 bytes, or estimated tokens when the rate is provisional).

    ``summary_so_far``: the request also carries the summary of the earlier chunks, which may
    be as long as a reply (``output_reserve``); the first request carries none.
    """
    if budget.provisional:
        prompt_tokens = estimate_tokens(prompt)
    else:
        prompt_tokens = math.ceil(utf8_len(prompt) * budget.tokens_per_byte)
    carried = budget.output_reserve if summary_so_far else 0
    tokens = budget.capacity - carried - prompt_tokens - FRAME_MARGIN_TOKENS
    if tokens <= 0:
        return tokens, 0
    if budget.provisional:
        return tokens, tokens
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


_PIECES = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}|[^\x00-\x7f]| ?[^\sA-Za-z0-9\x80-\U0010ffff]|\s+")
LETTERS_PER_TOKEN = 5


def estimate_tokens(text: str) -> int:
    """A content count of ``text`` kept above what BPE tokenizers count for ASCII text.

    GPT-2-style pieces: a letter run of L letters is ceil(L / 5) tokens, 1-3 digits, one punctuation
    character or a whitespace run of up to 4 one token each; a non-ASCII character counts its UTF-8
    bytes (what 1 token per byte counted before: scripts differ too much between tokenizers).
    """
    count = 0
    for match in _PIECES.finditer(text):
        piece = match.group()
        tail = piece[-1]
        if tail.isascii() and tail.isalpha():
            count += (len(piece.lstrip(" ")) + LETTERS_PER_TOKEN - 1) // LETTERS_PER_TOKEN
        elif not tail.isascii():
            count += utf8_len(piece)
        elif piece.isspace():
            count += (len(piece) + 3) // 4
        else:
            count += 1
    return count


def message_tokens(message: dict[str, Any]) -> int:
    """:func:`message_bytes` with :func:`estimate_tokens` for the text, framing in tokens."""
    size = MESSAGE_FRAMING_TOKENS
    for key in ("role", "content", "tool_call_id"):
        value = message.get(key)
        if isinstance(value, str):
            size += estimate_tokens(value)
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        size += sum(_call_tokens(call) for call in calls)
    return size


def _call_tokens(call: Any) -> int:
    if not isinstance(call, dict):
        return CALL_FRAMING_TOKENS
    function = call.get("function")
    if not isinstance(function, dict):
        function = {}
    size = CALL_FRAMING_TOKENS
    for value in (call.get("id"), function.get("name"), function.get("arguments")):
        if isinstance(value, str):
            size += estimate_tokens(value)
    return size


def transcript_bytes(messages: list[dict[str, Any]], wrapper: int = OLDER_CORE_MARGIN.bytes) -> int:
    """What ``messages`` count for as one chunk (``wrapper`` bytes included)."""
    return wrapper + sum(message_bytes(m) for m in messages)


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
    divided: int = 0
    """Messages divided between two requests."""
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


DIVIDE_SHARE = 8
"""A message is divided between two requests when what is left of a request is at least an
eighth of it (and :data:`MIN_DIVIDE` units): moving it whole would leave that much unused."""
MIN_DIVIDE = 256
CONTINUES = "\n[... continues in the next part]"
CONTINUED = "[... continued from the previous part]\n"


def divisible(message: dict[str, Any]) -> bool:
    """A message whose text may be divided between two summary requests: text only, no tool calls."""
    content = message.get("content")
    return isinstance(content, str) and len(content) > 1 and not message.get("tool_calls")


def divide(message: dict[str, Any], room: int, size_of: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``message`` as a head that fits ``room`` (ending with :data:`CONTINUES`) and the rest
    (starting with :data:`CONTINUED`), cut at a line or word end where one is near; None when no
    useful head fits."""
    content = message["content"]
    low, high = 0, len(content) - 1
    while low < high:  # the longest head that fits
        middle = (low + high + 1) // 2
        if size_of({**message, "content": content[:middle] + CONTINUES}) <= room:
            low = middle
        else:
            high = middle - 1
    if low < len(content) // 20 or low == 0:
        return None
    window = content[max(0, low - low // 10) : low]
    for separator in ("\n", " "):
        position = window.rfind(separator)
        if position > 0:
            low = low - len(window) + position + 1
            break
    return {**message, "content": content[:low] + CONTINUES}, {**message, "content": CONTINUED + content[low:]}


class _Packer:
    """Fills chunks in order; the first holds at most ``first``, every later one ``later``."""

    def __init__(self, first: int, later: int, size_of: Any, wrapper: int) -> None:
        self.later = later
        self.size_of = size_of
        self.wrapper = wrapper
        self.result = Split(chunks=[], sizes=[], limits=[])
        self.current: list[dict[str, Any]] = []
        self.used = wrapper
        self.limit = first

    @property
    def left(self) -> int:
        return self.limit - self.used

    def add(self, message: dict[str, Any], size: int) -> None:
        self.current.append(message)
        self.used += size

    def flush(self) -> None:
        if self.current:
            self.result.chunks.append(self.current)
            self.result.sizes.append(self.used)
            self.result.limits.append(self.limit)
            self.limit = self.later
        self.current, self.used = [], self.wrapper

    def fill_with(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """Put the head of ``message`` in what is left of this chunk (then closed); the rest, or
        None when dividing would not pay."""
        if not divisible(message) or self.left < max(MIN_DIVIDE, self.limit // DIVIDE_SHARE):
            return None
        if self.wrapper + self.size_of(message) > self.later:
            return None  # larger than a request: shortened as before, never spread over many
        parts = divide(message, self.left, self.size_of)
        if parts is None:
            return None
        self.add(parts[0], self.size_of(parts[0]))
        self.result.divided += 1
        self.flush()
        return parts[1]

    def place(self, message: dict[str, Any]) -> None:
        """One message that does not fit what is left: divided with the next chunk, moved to it, or
        shortened to one."""
        rest = self.fill_with(message)
        if rest is not None:
            message = rest
        size = self.size_of(message)
        if size <= self.left:
            self.add(message, size)
            return
        self.flush()
        cap = self.limit - self.wrapper
        if size > cap:
            message = shrink(message, cap)
            size = self.size_of(message)
            self.result.shortened += 1
        self.add(message, size)


def split(
    messages: list[dict[str, Any]],
    first: int,
    later: int,
    size_of: Any = message_bytes,
    wrapper: int = OLDER_CORE_MARGIN.bytes,
) -> Split:
    """Pack ``messages`` in order into chunks: the first at most ``first`` (wrapper included),
    every later one at most ``later`` (it also carries the summary so far), counted by ``size_of``
    (UTF-8 bytes by default; never more than a message's bytes, so shrinking to bytes is safe),
    ``wrapper`` counted once per chunk in the same unit.

    Each chunk is filled: a text message that does not fit what is left of one is divided
    between it and the next (:func:`divide`), so a request is never closed with an eighth or more
    of it unused; a tool call and its results move on whole when they fit one request.
    """
    sizes = [size_of(m) for m in messages]
    packer = _Packer(first, later, size_of, wrapper)
    for start, end in _units(messages):
        total = sum(sizes[start:end])
        if total <= packer.left:
            for index in range(start, end):
                packer.add(messages[index], sizes[index])
            continue
        if end - start == 1:
            packer.place(messages[start])
            continue
        if wrapper + total <= later:
            packer.flush()
            for index in range(start, end):
                packer.add(messages[index], sizes[index])
            continue
        # The batch alone is larger than a chunk: correctness of size wins over keeping it whole.
        packer.result.batches_split += 1
        for index in range(start, end):
            if sizes[index] <= packer.left:
                packer.add(messages[index], sizes[index])
            else:
                packer.place(messages[index])
    packer.flush()
    return packer.result
