"""Request checks: what a real provider would reject, so that adapter bugs fail the tests.

Each check returns the first problem as one line naming the message and field, or None.
"""

from __future__ import annotations

from typing import Any


def wire_problem(kind: str, body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The first reason a real ``kind`` (``openai``/``anthropic``) server would refuse ``body``, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is missing"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    problem = _private_keys(messages)
    if problem:
        return problem
    if kind == "openai":
        return _openai_problem(body, messages)
    if "anthropic-version" not in headers:
        return "anthropic-version header is missing"
    return _anthropic_problem(body, messages)


def _private_keys(messages: list[Any]) -> str | None:
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages[{index}] is not an object"
        private = [key for key in message if key.startswith("_")]
        if private:
            return f"messages[{index}] carries private field(s) {', '.join(private)}"
    return None


def _openai_problem(body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    if "stream_options" in body and not body.get("stream"):
        return "stream_options is only allowed when stream is true"
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{index}].role {role!r} is invalid"
        if role != "tool" and pending:
            return f"messages[{index}]: tool call(s) {', '.join(sorted(pending))} have no result"
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                if not isinstance((call.get("function") or {}).get("arguments"), str):
                    return f"messages[{index}]: tool call arguments must be a JSON string"
                pending.add(call.get("id"))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return f"messages[{index}]: tool_call_id {call_id!r} answers no pending tool call"
            pending.discard(call_id)
    return None


def _anthropic_problem(body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens is required"
    if "system" in body and not isinstance(body["system"], str | list):
        return "system must be a string or a list of blocks"
    expected_ids: set[str] = set()
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages[{index}].role {role!r} is invalid (system goes top-level)"
        if index == 0 and role != "user":
            return "the first message must be a user message"
        if role == previous:
            return f"messages[{index}]: roles must alternate (two {role} messages in a row)"
        previous = role
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not isinstance(blocks, list) or not blocks:
            return f"messages[{index}].content must be a non-empty string or list"
        for block in blocks:
            if block.get("type") == "text" and not block.get("text"):
                return f"messages[{index}]: text content blocks must be non-empty"
        if role == "user":
            answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
            if answered - expected_ids:
                return f"messages[{index}]: tool_result for unknown tool_use id(s) {sorted(answered - expected_ids)}"
            if expected_ids - answered:
                return f"messages[{index}]: tool_use id(s) {sorted(expected_ids - answered)} have no tool_result"
            kinds = [b.get("type") for b in blocks]
            if "tool_result" in kinds and kinds.index("tool_result") != 0:
                return f"messages[{index}]: tool_result blocks must come first"
            expected_ids = set()
        else:
            if expected_ids:
                return f"messages[{index}]: tool_use id(s) {sorted(expected_ids)} have no tool_result"
            for block in blocks:
                if block.get("type") == "tool_use":
                    if not isinstance(block.get("input"), dict):
                        return f"messages[{index}]: tool_use input must be an object"
                    expected_ids.add(block.get("id"))
    return None
