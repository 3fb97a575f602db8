"""Request checks: what a real provider would reject, so that adapter bugs fail the tests.

Each check returns the first problem as one line naming the message and field, or None.
"""

from __future__ import annotations

from typing import Any


def wire_problem(kind: str, body: dict[str, Any], headers: dict[str, str]) -> str | None:
    """The first reason a real ``kind`` (``openai``/``anthropic``/``responses``) server would refuse
    ``body``, or None."""
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is missing"
    if kind == "responses":
        return _responses_problem(body)
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
        calls = message.get("tool_calls")
        for call in calls if isinstance(calls, list) else []:
            private += [key for key in call if key.startswith("_")] if isinstance(call, dict) else []
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


# Chat Completions fields the Responses API refuses ("Unsupported parameter"/"Unknown parameter").
_NOT_RESPONSES = ("messages", "max_tokens", "max_completion_tokens", "stream_options", "functions")
_ITEM_TYPES = ("message", "function_call", "function_call_output", "reasoning")


def _responses_problem(body: dict[str, Any]) -> str | None:
    """What the Responses API refuses: Chat fields, server state that ``store: false`` never kept,
    tools not in its flat function shape, and input items that do not pair up."""
    for key in body:
        if key in _NOT_RESPONSES or key.startswith("_"):
            return f"unknown parameter {key!r} (the Responses API takes input, instructions, max_output_tokens)"
    if body.get("previous_response_id") is not None:
        return f"previous response with id {body['previous_response_id']!r} not found (nothing is stored here)"
    for index, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(tool.get("name"), str):
            return f"tools[{index}].name is missing (Responses function tools are flat: type, name, parameters)"
    raw = body.get("input")
    if isinstance(raw, str):
        return None if raw else "input must not be empty"
    if not isinstance(raw, list) or not raw:
        return "input must be a non-empty string or list of items"
    return _responses_items(raw)


def _responses_items(items: list[Any]) -> str | None:
    pending: set[str] = set()
    made: set[str] = set()  # the API matches an output to its call by call_id alone
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            return f"input[{index}] is not an object"
        private = [key for key in item if key.startswith("_")]
        if private:
            return f"input[{index}] carries unknown parameter(s) {', '.join(private)}"
        kind = item.get("type", "message")
        if kind not in _ITEM_TYPES:
            return f"input[{index}].type {kind!r} is invalid"
        if kind == "message" and item.get("role") not in ("user", "assistant", "system", "developer"):
            return f"input[{index}].role {item.get('role')!r} is invalid"
        if kind == "reasoning" and not item.get("encrypted_content"):
            missing = f"item with id {item.get('id')!r} not found"
            return f"input[{index}]: {missing} (items are not persisted when store is false)"
        if kind == "function_call":
            if not isinstance(item.get("arguments"), str) or not isinstance(item.get("call_id"), str):
                return f"input[{index}]: a function_call needs a call_id and string arguments"
            if item["call_id"] in made:
                return f"input[{index}]: duplicate call_id {item['call_id']!r}: each function_call needs its own"
            made.add(item["call_id"])
            pending.add(item["call_id"])
        elif kind == "function_call_output":
            if item.get("call_id") not in pending:
                return (
                    f"input[{index}]: no tool call found for function call output with call_id {item.get('call_id')!r}"
                )
            pending.discard(item["call_id"])
        elif pending:
            return f"input[{index}]: no tool output found for function call(s) {', '.join(sorted(pending))}"
    if pending:
        return f"no tool output found for function call(s) {', '.join(sorted(pending))}"
    return None
