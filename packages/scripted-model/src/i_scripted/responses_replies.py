"""OpenAI Responses replies: the ``response`` object, its typed SSE events and the usage object.

Finish reasons are scripted in Chat terms: ``length`` is ``status: "incomplete"`` with
``incomplete_details.reason: "max_output_tokens"``, ``content_filter`` its ``content_filter``;
anything else completes. Reasoning is a ``reasoning`` item with a summary, and its
``encrypted_content`` only when the request's ``include`` asks for ``reasoning.encrypted_content``.
A stream sends ``response.created``, ``response.in_progress``, each item's ``output_item.added``,
its parts (``content_part.added``/``.done``, ``reasoning_summary_part.added``/``.done``), deltas
and ``output_item.done``, then ``response.completed`` (or ``response.incomplete``) with the whole
response, each event with its ``sequence_number``, as OpenAI does. As real services do, each
response numbers its calls from ``call_0`` (so ids repeat across responses), and a message item
carries ``phase`` (``commentary`` beside tool calls, else ``final_answer``; a step's ``phase``
sets it, ``null`` leaves it out).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from i_scripted.replies import arguments_json, output_tokens, pieces, reply_text
from i_scripted.tokens import reference_tokens

_INCOMPLETE = {"length": "max_output_tokens", "content_filter": "content_filter"}


def responses_usage(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    """The step's usage object (``"omit"``: none), else one counted from the request and the reply."""
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    output = output_tokens(request, step)
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},  # no prompt cache here, said as OpenAI says it
        "output_tokens": output,
        "output_tokens_details": {"reasoning_tokens": reference_tokens(step.get("reasoning") or "")},
        "total_tokens": prompt + output,
    }


def _serial(request: dict[str, Any]) -> int:
    raw = request.get("input")
    return len(raw) if isinstance(raw, list) else 1


def _output(request: dict[str, Any], step: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if step.get("reasoning"):
        reasoning: dict[str, Any] = {
            "type": "reasoning",
            "id": f"rs_scripted_{serial}",
            "summary": [{"type": "summary_text", "text": step["reasoning"]}],
        }
        if "reasoning.encrypted_content" in (request.get("include") or []):
            reasoning["encrypted_content"] = f"scripted-encrypted-{serial}"
        items.append(reasoning)
    text = reply_text(request, step)
    if text:
        message: dict[str, Any] = {
            "type": "message",
            "id": f"msg_scripted_{serial}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        phase = step.get("phase", "commentary" if step.get("tool_calls") else "final_answer")
        if phase is not None:
            message["phase"] = phase
        items.append(message)
    for index, call in enumerate(step.get("tool_calls") or []):
        items.append(
            {
                "type": "function_call",
                "id": f"fc_scripted_{serial}_{index}",
                # As real Responses-compatible services do: each response numbers its calls from call_0.
                "call_id": str(call.get("id") or f"call_{index}"),
                "name": call["name"],
                "arguments": arguments_json(call),
                "status": "completed",
            }
        )
    return items


def responses_body(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any]:
    """The ``response`` object answering ``request`` with ``step``."""
    serial = _serial(request)
    reason = _INCOMPLETE.get(step.get("finish_reason") or "")
    body: dict[str, Any] = {
        "id": f"resp_scripted_{serial}",
        "object": "response",
        "created_at": 0,
        "status": "incomplete" if reason else "completed",
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "model": request.get("model"),
        "output": _output(request, step, serial),
        "store": request.get("store", True),
    }
    usage = responses_usage(request, step, prompt)
    if usage is not None:
        body["usage"] = usage
    return body


def responses_events(request: dict[str, Any], step: dict[str, Any], prompt: int) -> Iterator[tuple[str | None, Any]]:
    """The named, typed SSE events of the streamed answer, ``response.created`` to the final one."""
    body = responses_body(request, step, prompt)
    sequence = 0

    def event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
        nonlocal sequence
        sequence += 1
        return kind, {"type": kind, "sequence_number": sequence - 1, **fields}

    started = {**body, "status": "in_progress", "output": [], "incomplete_details": None}
    started.pop("usage", None)
    yield event("response.created", response=started)
    yield event("response.in_progress", response=started)
    for index, item in enumerate(body["output"]):
        yield event("response.output_item.added", output_index=index, item=_empty(item))
        if item["type"] == "message":
            text = item["content"][0]["text"]
            where = {"item_id": item["id"], "output_index": index, "content_index": 0}
            yield event(
                "response.content_part.added", **where, part={"type": "output_text", "text": "", "annotations": []}
            )
            for piece in pieces(text):
                yield event("response.output_text.delta", **where, delta=piece, logprobs=[])
            yield event("response.output_text.done", **where, text=text, logprobs=[])
            yield event("response.content_part.done", **where, part=item["content"][0])
        elif item["type"] == "reasoning":
            for number, summary in enumerate(item["summary"]):
                where = {"item_id": item["id"], "output_index": index, "summary_index": number}
                yield event("response.reasoning_summary_part.added", **where, part={"type": "summary_text", "text": ""})
                for piece in pieces(summary["text"]):
                    yield event("response.reasoning_summary_text.delta", **where, delta=piece)
                yield event("response.reasoning_summary_text.done", **where, text=summary["text"])
                yield event("response.reasoning_summary_part.done", **where, part=summary)
        elif item["type"] == "function_call":
            for piece in pieces(item["arguments"]):
                yield event(
                    "response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=piece
                )
            yield event(
                "response.function_call_arguments.done",
                item_id=item["id"],
                output_index=index,
                arguments=item["arguments"],
            )
        yield event("response.output_item.done", output_index=index, item=item)
    final = "response.incomplete" if body["status"] == "incomplete" else "response.completed"
    yield event(final, response=body)


def _empty(item: dict[str, Any]) -> dict[str, Any]:
    """An output item as ``output_item.added`` announces it: in progress, before its content."""
    if item["type"] == "message":
        return {**item, "status": "in_progress", "content": []}
    if item["type"] == "function_call":
        return {**item, "status": "in_progress", "arguments": ""}
    return item
