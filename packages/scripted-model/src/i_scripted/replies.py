"""What every wire's replies share: the step's text as sent, the output cap, output tokens.

- A step's ``text`` may hold ``{{last_tool_result}}`` and ``{{last_user_message}}``, filled in
  from the request (any wire format).
- Output tokens: the reply text + reasoning + each tool call's name and arguments, at least 1. A
  text longer than the request's ``max_output_tokens``/``max_completion_tokens``/``max_tokens`` is
  cut at that many tokens and finishes with ``length``, as a real server does.
- Streaming replies split text, reasoning and tool-call arguments into several deltas (``pieces``).
"""

from __future__ import annotations

from typing import Any

import orjson

from i_scripted.tokens import reference_tokens, requested_output_tokens


def _wire_text(content: Any) -> str:
    """The text of a provider wire content value: a string, or its text parts and (Anthropic) tool
    results joined with "". A wire reader, not the history format's (``i_protocol.history``)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _wire_text(part.get("text") if part.get("type") == "text" else part.get("content"))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "tool_result")
        )
    return ""


def _responses_last(request: dict[str, Any], what: str) -> str:
    """The last tool output or the last user text of a Responses request's ``input``."""
    raw = request.get("input")
    items = [{"type": "message", "role": "user", "content": raw}] if isinstance(raw, str) else raw or []
    for item in reversed(items):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if what == "tool" and kind == "function_call_output":
            return _wire_text(item.get("output"))
        if what == "user" and kind == "message" and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, list):
                content = "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
            if content:
                return str(content)
    return ""


def _last(request: dict[str, Any], what: str) -> str:
    """The last tool result or the last user text of ``request`` (any wire format)."""
    if "input" in request and "messages" not in request:
        return _responses_last(request, what)
    for message in reversed(request.get("messages") or []):
        role, content = message.get("role"), message.get("content")
        if what == "tool":
            if role == "tool":
                return _wire_text(content)
            if role == "user" and isinstance(content, list):
                results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if results:
                    return _wire_text(results[-1].get("content"))
        elif role == "user":
            texts = [b for b in content if b.get("type") == "text"] if isinstance(content, list) else content
            text = _wire_text(texts)
            if text:
                return text
    return ""


def reply_text(request: dict[str, Any], step: dict[str, Any]) -> str:
    """The step's text with its templates filled in from ``request``."""
    text = step.get("text") or ""
    if "{{" in text:
        text = text.replace("{{last_tool_result}}", _last(request, "tool"))
        text = text.replace("{{last_user_message}}", _last(request, "user"))
    return text


def capped(request: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """The step as a real server delivers it: a text longer than the requested output is cut there.

    A reply whose text counts more tokens than ``max_completion_tokens`` / ``max_tokens`` is cut at
    that many tokens (``reference_tokens``) and finishes with ``length``, as real servers do; a step
    with an explicit ``finish_reason`` or tool calls is sent as scripted.
    """
    cap = requested_output_tokens(request)
    text = reply_text(request, step)
    if cap is None or not text or step.get("finish_reason") or step.get("tool_calls") or reference_tokens(text) <= cap:
        return step
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits the cap
        middle = (low + high + 1) // 2
        if reference_tokens(text[:middle]) <= cap:
            low = middle
        else:
            high = middle - 1
    return {**step, "text": text[:low], "finish_reason": "length"}


def arguments_json(call: dict[str, Any]) -> str:
    """A scripted tool call's arguments as the JSON string the OpenAI wire carries."""
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def call_id(index: int, call: dict[str, Any], prefix: str, serial: int) -> str:
    """The call's scripted id, else one unique within the conversation (``serial`` = its length)."""
    return str(call.get("id") or f"{prefix}_{serial}_{index}")


def pieces(text: str, size: int = 8) -> list[str]:
    """``text`` in deltas of ``size`` characters (one empty delta for an empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def output_tokens(request: dict[str, Any], step: dict[str, Any]) -> int:
    """Tokens of a reply: text + reasoning + each tool call's name and arguments; at least 1."""
    total = reference_tokens(reply_text(request, step)) + reference_tokens(step.get("reasoning") or "")
    for call in step.get("tool_calls") or []:
        total += reference_tokens(call["name"]) + reference_tokens(arguments_json(call))
    return max(1, total)
