"""OpenAI Chat Completions replies: the JSON body, the SSE chunks and the usage object.

Usage goes in the body, and in a final chunk of a stream only when the request set
``stream_options.include_usage``, as OpenAI does.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from i_scripted.replies import arguments_json, call_id, output_tokens, pieces, reply_text


def openai_usage(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    """The step's usage object (``"omit"``: none), else one counted from the request and the reply."""
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    completion = output_tokens(request, step)
    # The stand-in has no prompt cache, and says so the way OpenAI does: zero cached tokens.
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def _openai_message(request: dict[str, Any], step: dict[str, Any], serial: int) -> dict[str, Any]:
    text = reply_text(request, step)
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not step.get("tool_calls") else None}
    if step.get("reasoning"):
        message["reasoning_content"] = step["reasoning"]
    calls = step.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": call_id(i, c, "call", serial),
                "type": "function",
                "function": {"name": c["name"], "arguments": arguments_json(c)},
            }
            for i, c in enumerate(calls)
        ]
    return message


def _openai_finish(step: dict[str, Any]) -> str:
    return step.get("finish_reason") or ("tool_calls" if step.get("tool_calls") else "stop")


def openai_body(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any]:
    """The ``chat.completion`` JSON answering ``request`` with ``step``."""
    serial = len(request.get("messages") or [])
    message = _openai_message(request, step, serial)
    body: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(step)}],
    }
    usage = openai_usage(request, step, prompt)
    if usage is not None:
        body["usage"] = usage
    return body


def openai_chunks(request: dict[str, Any], step: dict[str, Any], prompt: int) -> Iterator[tuple[str | None, Any]]:
    """The SSE events (no event names) of the streamed answer, ending with ``[DONE]``."""
    serial = len(request.get("messages") or [])
    message = _openai_message(request, step, serial)
    base = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": request.get("model"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in pieces(message.get("reasoning_content") or "") if message.get("reasoning_content") else []:
        yield chunk({"reasoning_content": piece})
    for piece in pieces(message["content"]) if message.get("content") else []:
        yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in pieces(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _openai_finish(step))
    usage = openai_usage(request, step, prompt)
    if usage is not None and (request.get("stream_options") or {}).get("include_usage"):
        yield None, {**base, "choices": [], "usage": usage}
    yield None, "[DONE]"
