"""Anthropic Messages replies: the JSON body, the SSE events and the usage object.

A stream carries the input usage in ``message_start`` and ``output_tokens`` in ``message_delta``;
reasoning is a ``thinking`` block with a signature; finish reasons are scripted in OpenAI terms.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from i_scripted.replies import call_id, output_tokens, pieces, reply_text

_ANTHROPIC_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def anthropic_usage(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    """The step's usage object (``"omit"``: none), else one counted from the request and the reply."""
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    return {
        "input_tokens": prompt,
        "output_tokens": output_tokens(request, step),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def _anthropic_blocks(request: dict[str, Any], step: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.get("reasoning"):
        blocks.append({"type": "thinking", "thinking": step["reasoning"], "signature": f"scripted-signature-{serial}"})
    text = reply_text(request, step)
    if text:
        blocks.append({"type": "text", "text": text})
    for index, call in enumerate(step.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        call_input = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        blocks.append(
            {
                "type": "tool_use",
                "id": call_id(index, call, "toolu", serial),
                "name": call["name"],
                "input": call_input,
            }
        )
    return blocks


def _anthropic_stop(step: dict[str, Any]) -> str:
    reason: str | None = step.get("finish_reason")
    if reason:
        return _ANTHROPIC_FINISH.get(reason, reason)
    return "tool_use" if step.get("tool_calls") else "end_turn"


def anthropic_body(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any]:
    """The ``message`` JSON answering ``request`` with ``step``."""
    serial = len(request.get("messages") or [])
    blocks = _anthropic_blocks(request, step, serial)
    body: dict[str, Any] = {
        "id": f"msg_scripted_{serial}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model"),
        "content": blocks,
        "stop_reason": _anthropic_stop(step),
        "stop_sequence": None,
    }
    usage = anthropic_usage(request, step, prompt)
    if usage is not None:
        body["usage"] = usage
    return body


def anthropic_events(request: dict[str, Any], step: dict[str, Any], prompt: int) -> Iterator[tuple[str | None, Any]]:
    """The named SSE events of the streamed answer, ``message_start`` to ``message_stop``."""
    body = anthropic_body(request, step, prompt)
    usage = body.pop("usage", None)
    start = {**body, "content": [], "stop_reason": None}
    if usage is not None:
        start["usage"] = {key: value for key, value in usage.items() if key != "output_tokens"}
    yield "message_start", {"type": "message_start", "message": start}
    yield "ping", {"type": "ping"}  # Anthropic sends pings (here one, where real streams put the first)
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        empty = {
            "text": {"type": "text", "text": ""},
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}},
        }[kind]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        if kind == "text":
            deltas = [{"type": "text_delta", "text": piece} for piece in pieces(block["text"])]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in pieces(orjson.dumps(block["input"]).decode())
            ]
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    final: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
    }
    if usage is not None and "output_tokens" in usage:
        final["usage"] = {"output_tokens": usage["output_tokens"]}
    yield "message_delta", final
    yield "message_stop", {"type": "message_stop"}
