"""The shape of a history as the cut planner sees it: messages, tool batches, safe boundaries."""

from __future__ import annotations

from typing import Any

SUMMARY_OPEN = "<continuation_summary>"
SUMMARY_CLOSE = "</continuation_summary>"


def content_text(message: dict[str, Any]) -> str:
    """The text of a message's content (string, or the text parts of a part list)."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, str):
                texts.append(part)
        return "\n".join(texts)
    return ""


def has_images(message: dict[str, Any]) -> bool:
    """Whether a message's content carries image parts."""
    content = message.get("content")
    return isinstance(content, list) and any(
        isinstance(p, dict) and p.get("type") in ("image_url", "image", "input_image") for p in content
    )


def is_summary_message(message: dict[str, Any]) -> bool:
    """Whether a message is a compaction summary (a synthetic user message, not a request)."""
    return message.get("role") == "user" and SUMMARY_OPEN in content_text(message)


def is_attachment(history: list[dict[str, Any]], index: int) -> bool:
    """A user message that only carries a tool batch's images belongs to that batch."""
    message = history[index]
    if message.get("role") != "user" or index == 0 or history[index - 1].get("role") != "tool":
        return False
    return has_images(message)


def boundaries(history: list[dict[str, Any]]) -> list[bool]:
    """``ok[k]``: cutting before message ``k`` splits no tool batch and starts at user/assistant."""
    ok = [False] * len(history)
    open_calls = 0
    for index, message in enumerate(history):
        role = message.get("role")
        if role == "tool":
            open_calls = max(open_calls - 1, 0)
            continue
        # A tool batch is the assistant message with tool_calls plus its results (and the
        # user image attachments the core appends to them): never a place to cut.
        if role in ("user", "assistant") and open_calls == 0 and not is_attachment(history, index):
            ok[index] = True
        open_calls = 0  # a batch missing results ends here; validated histories never do this
        if role == "assistant":
            calls = message.get("tool_calls")
            open_calls = len(calls) if isinstance(calls, list) else 0
    return ok


def is_real_user(history: list[dict[str, Any]], index: int) -> bool:
    """A user turn typed by a person: not a summary, not a tool image attachment."""
    message = history[index]
    return (
        message.get("role") == "user"
        and not is_summary_message(message)
        and not is_attachment(history, index)
        and bool(content_text(message).strip() or has_images(message))
    )


def approx_size(message: dict[str, Any]) -> int:
    """A cheap size proxy (characters of content and tool-call arguments)."""
    content = message.get("content")
    size = (len(content) if isinstance(content, str) else len(content_text(message))) + 16
    calls = message.get("tool_calls")
    if calls and isinstance(calls, list):
        for call in calls:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                size += len(str(function.get("arguments", ""))) + len(str(function.get("name", "")))
    return size


def latest_summary(history: list[dict[str, Any]]) -> str | None:
    """The body-bearing text of the most recent summary message, if the history has one."""
    for message in reversed(history[1:]):
        if is_summary_message(message):
            return content_text(message)
    return None
