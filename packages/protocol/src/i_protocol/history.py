"""The history format every hook sees: its types, its one validator, and the helpers over it.

Public API, versioned with the protocol: the types, ``ROLES``, ``validate_history``,
``check_tool_calls``, ``text_of``, ``has_images``, ``is_attachment``,
``SUMMARY_KIND``, ``is_summary`` and ``summary_marker``. The core validates every history a hook
returns with ``validate_history``; workers use the same helpers, so no package keeps its own
reading of the format.

Sizes are measured here too, one way for every package: ``IMAGE_PART_TYPES`` / ``is_image_part``
(what carries an image), ``utf8_len`` (UTF-8 bytes of a text, a lone surrogate counted as the 3
bytes ``surrogatepass`` writes) and ``wire_bytes`` (the bytes of a message, or any JSON value, as
compact JSON).

Messages are OpenAI Chat-Completions shaped: ``{"role", "content", "tool_calls"?, "tool_call_id"?}``
plus top-level ``_``-prefixed private fields, which workers see and providers never do.
``history[0]`` is the system message. A tool batch is an assistant message with ``tool_calls``,
its results (one ``tool`` message per call, in any order), and the user messages that only carry
those results' images. A compaction summary is a user message marked
``"_compaction": {"kind": "summary"}``; the marker, not its text, is what makes it one.
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

import orjson

from .errors import HistoryError

__all__ = [
    "IMAGE_PART_TYPES",
    "ROLES",
    "SUMMARY_KIND",
    "Function",
    "HistoryError",
    "ImagePart",
    "Message",
    "TextPart",
    "ToolCall",
    "check_tool_calls",
    "has_images",
    "is_attachment",
    "is_image_part",
    "is_summary",
    "summary_marker",
    "text_of",
    "utf8_len",
    "validate_history",
    "wire_bytes",
]

ROLES = ("system", "user", "assistant", "tool")
SUMMARY_KIND = "summary"
"""``message["_compaction"]["kind"]`` of a compaction summary."""
IMAGE_PART_TYPES = frozenset({"image_url", "image", "input_image"})
"""Part/block ``type`` values that carry an image: Chat Completions' ``image_url`` (the only one a
valid history holds), Anthropic's ``image`` and Responses' ``input_image`` (in replayed adapter
state, and in what a worker is given before validation)."""


class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageUrl(TypedDict):
    url: str


class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageUrl


class Function(TypedDict):
    name: str
    arguments: str
    """A JSON string, as the model wrote it."""


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: Function


class Message(TypedDict):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[TextPart | ImagePart] | None
    tool_calls: NotRequired[list[ToolCall]]
    tool_call_id: NotRequired[str]


def _check_content(message: dict[str, Any], where: str) -> None:
    content = message.get("content")
    if content is None:
        if message["role"] in ("user", "tool", "system"):
            raise HistoryError(f"{where}: {message['role']} message has no content")
        return
    if isinstance(content, str):
        return
    if not isinstance(content, list):
        raise HistoryError(f"{where}: content must be a string or a list of parts")
    for j, part in enumerate(content):
        if not isinstance(part, dict) or part.get("type") not in ("text", "image_url"):
            raise HistoryError(f"{where}.content[{j}]: part must be a text or image_url object")
        if part["type"] == "text" and not isinstance(part.get("text"), str):
            raise HistoryError(f"{where}.content[{j}]: text part has no text")
        if part["type"] == "image_url":
            url = part.get("image_url", {}).get("url") if isinstance(part.get("image_url"), dict) else None
            if not isinstance(url, str):
                raise HistoryError(f"{where}.content[{j}]: image_url part has no url")
            if url.startswith("data:") and ";base64," not in url[: url.find(",") + 1]:
                raise HistoryError(
                    f"{where}.content[{j}]: image data URL must be base64 encoded (data:<type>;base64,...)"
                )


def check_tool_calls(calls: object, where: str) -> list[str]:
    """Validate one assistant message's tool calls; returns their ids in order."""
    if not isinstance(calls, list) or not calls:
        raise HistoryError(f"{where}: tool_calls must be a non-empty list")
    ids: list[str] = []
    for j, call in enumerate(calls):
        w = f"{where}.tool_calls[{j}]"
        if not isinstance(call, dict):
            raise HistoryError(f"{w}: must be an object")
        call_id = call.get("id")
        if not isinstance(call_id, str) or not call_id:
            raise HistoryError(f"{w}: missing id")
        if call_id in ids:
            raise HistoryError(f"{w}: duplicate tool call id {call_id!r}")
        if call.get("type") != "function":
            raise HistoryError(f'{w}: type must be "function", got {call.get("type")!r}')
        function = call.get("function")
        if not isinstance(function, dict):
            raise HistoryError(f"{w}: missing function")
        if not isinstance(function.get("name"), str) or not function["name"]:
            raise HistoryError(f"{w}: missing function name")
        if not isinstance(function.get("arguments"), str):
            raise HistoryError(f"{w}: function arguments must be a JSON string")
        ids.append(call_id)
    return ids


def validate_history(history: object, *, allow_pending: bool = False) -> None:
    """Check the whole history: shape, roles, content, and exactly one result per tool call.

    ``allow_pending`` accepts a final assistant batch whose results are not in yet (the state
    between receiving a reply and running its tools).
    """
    if not isinstance(history, list) or not history:
        raise HistoryError("history must be a non-empty list of messages")
    pending: list[str] = []
    for i, message in enumerate(history):
        where = f"history[{i}]"
        if not isinstance(message, dict):
            raise HistoryError(f"{where}: message must be an object")
        role = message.get("role")
        if role not in ROLES:
            raise HistoryError(f"{where}: unknown role {role!r}; roles are {', '.join(ROLES)}")
        if (i == 0) != (role == "system"):
            raise HistoryError(f"{where}: the system message must come first and only first")
        _check_content(message, where)
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise HistoryError(f"{where}: tool result {call_id!r} answers no pending tool call")
            pending.remove(call_id)
            continue
        if pending:
            raise HistoryError(f"{where}: tool call(s) {', '.join(pending)} have no result before this {role} message")
        if role == "assistant" and "tool_calls" in message:
            pending = check_tool_calls(message["tool_calls"], where)
        elif role == "assistant" and message.get("content") is None:
            raise HistoryError(f"{where}: assistant message has neither content nor tool calls")
    if pending and not allow_pending:
        raise HistoryError(f"tool call(s) {', '.join(pending)} have no result")


def text_of(message: dict[str, Any]) -> str:
    """The text of a message: its string content, or its text parts joined by newlines (images omitted).

    Parts are separate blocks, so they are joined with ``"\\n"``: gluing them with nothing would
    fuse the last word of one to the first of the next.
    """
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)
        )
    return ""


def is_image_part(part: object) -> bool:
    """Whether ``part`` (a content part, or any block of a provider's format) carries an image."""
    return isinstance(part, dict) and part.get("type") in IMAGE_PART_TYPES


def has_images(message: dict[str, Any]) -> bool:
    """Whether a message's content carries image parts."""
    content = message.get("content")
    return isinstance(content, list) and any(is_image_part(p) for p in content)


def utf8_len(text: str) -> int:
    """UTF-8 bytes of ``text``; a lone surrogate (kept losslessly in sessions) counts 3 bytes."""
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def wire_bytes(value: Any) -> int:
    """Bytes of ``value`` (a message, a history, tool schemas) as compact JSON, what it costs on the
    wire; a value holding a lone surrogate, which JSON cannot encode, is measured the slow way."""
    try:
        return len(orjson.dumps(value))
    except TypeError:
        return len(repr(value).encode("utf-8", "surrogatepass"))


def is_attachment(history: list[dict[str, Any]], index: int) -> bool:
    """A user message with images right after a tool result carries that batch's images: it is part of it."""
    message = history[index]
    if message.get("role") != "user" or index == 0 or history[index - 1].get("role") != "tool":
        return False
    return has_images(message)


def summary_marker() -> dict[str, str]:
    """The private field value that marks a message as a compaction summary."""
    return {"kind": SUMMARY_KIND}


def is_summary(message: dict[str, Any]) -> bool:
    """Whether a message is a compaction summary: a user message carrying the summary marker."""
    marker = message.get("_compaction")
    return message.get("role") == "user" and isinstance(marker, dict) and marker.get("kind") == SUMMARY_KIND
