"""The shape of a history as the cut planner sees it: messages, tool batches, safe boundaries.

The history format itself (text, images, tool-batch attachments, the summary marker) is
``i_protocol.history``'s; this module adds only what planning a cut needs. (The
``<continuation_summary>`` block this compactor writes a summary in, seed 002, is
``i_protocol.summary``'s ``CONTINUATION_OPEN`` / ``CONTINUATION_CLOSE``: a text, not the marker
that makes a message a summary.)
"""

from __future__ import annotations

from typing import Any

from i_protocol.history import has_images, is_attachment, is_summary, text_of


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
    """A user turn typed by a person: not a summary, not a tool image attachment, not only the
    core's note that the user interrupted the turn before, and not what a harness sends in the
    user role (an observation, a note, a repeat: ``actions.user_kinds``)."""
    message = history[index]
    return (
        message.get("role") == "user"
        and not is_summary(message)
        and not is_attachment(history, index)
        and bool(request_text(message).strip() or has_images(message))
        and _kinds(history).get(index, "request") == "request"
    )


def _kinds(history: list[dict[str, Any]]) -> dict[int, str]:
    from .actions import user_kinds  # computed once per list there

    return user_kinds(history)


def request_text(message: dict[str, Any]) -> str:
    """The text of a user message without the core's ``_interrupted`` note: never the request."""
    content = message.get("content")
    if isinstance(content, list) and any(isinstance(part, dict) and part.get("_interrupted") for part in content):
        kept = [part for part in content if not (isinstance(part, dict) and part.get("_interrupted"))]
        message = {**message, "content": kept}
    return text_of(message)


def approx_size(message: dict[str, Any]) -> int:
    """A cheap size proxy (characters of content and tool-call arguments)."""
    content = message.get("content")
    size = (len(content) if isinstance(content, str) else len(text_of(message))) + 16
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
        if is_summary(message):
            return text_of(message)
    return None
