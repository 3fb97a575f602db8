"""The bundled `responses` worker: the OpenAI Responses wire transform, both ways.

Only requests of ``protocol: "responses"`` are touched; every other protocol passes unchanged, so
the module can sit in the ``full`` profile whatever config.json selects.

- ``before_request``: the core's history-format body (``messages`` in the history format,
  Chat-style function ``tools``, ``max_output_tokens``, ``stream``, ``store: false``, extra_body
  fields) becomes the Responses request: ``history[0]`` (the system message) becomes
  ``instructions``; user/system messages become ``message`` items, assistant tool calls
  ``function_call`` items, tool results ``function_call_output`` items; the reasoning items kept
  in an assistant message's ``_responses_output`` go back before it, verbatim (their
  ``encrypted_content`` is what ``include: ["reasoning.encrypted_content"]`` asks for, since
  ``store: false`` keeps nothing on the server); when the answer's message items carried a
  ``phase`` (``"commentary"``, ``"final_answer"``: newer models ask for it back), those message
  items are kept there too and replayed in order with their ``phase`` instead of the joined text;
  tools become Responses function tools (``strict: false``: the schemas are not written for strict
  mode).
- ``after_response``: the ``response`` object becomes a **history reply** ``{"message",
  "finish_reason", "usage"?, "id", "model"}``; a response that did not complete (``incomplete``,
  ``failed``, or cut before its final event) becomes ``{"error": {...}}`` instead, which the core
  raises, so nothing of it enters the history. Observers that need the provider's own answer (the
  cache) run before this hook.
"""

from __future__ import annotations

from typing import Any

import orjson

from i_protocol import Request, Worker, WorkerError
from i_protocol.history import text_of

from ..__about__ import __version__
from ..providers.reply import included_cache, joined_runs

worker = Worker("responses", __version__, dist_name="i-core responses")

INCLUDE = "reasoning.encrypted_content"
# Fields of the history-format body that the transform replaces; everything else goes on the wire.
_HISTORY_FIELDS = ("messages", "tools")


@worker.hook("before_request")
def before_request(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Turn the history-format body of a ``responses`` request into the Responses request."""
    del request
    body = data.get("body")
    if data.get("protocol") == "responses" and isinstance(body, dict) and "messages" in body:
        data["body"] = responses_request(body)
    return data


@worker.hook("after_response")
def after_response(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Turn the ``response`` object of a ``responses`` request into a history reply (or an error)."""
    del request
    if data.get("protocol") == "responses":
        data["response"] = history_reply(data.get("response"))
    return data


def responses_request(body: dict[str, Any]) -> dict[str, Any]:
    """The Responses request for a history-format ``body``."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        raise WorkerError("before_request: body.messages must be the history (a list of messages)")
    wire = {key: value for key, value in body.items() if key not in _HISTORY_FIELDS}
    if messages and isinstance(messages[0], dict) and messages[0].get("role") == "system":
        instructions = text_of(messages[0])
        if instructions:
            wire["instructions"] = instructions
        messages = messages[1:]
    wire["input"] = [item for message in messages for item in _items(message)]
    tools = [_tool(tool) for tool in body.get("tools") or []]
    if tools:
        wire["tools"] = tools
    wire["store"] = False
    include = wire.get("include")
    include = list(include) if isinstance(include, list) else []
    wire["include"] = include if INCLUDE in include else [*include, INCLUDE]
    return wire


def _tool(tool: Any) -> dict[str, Any]:
    spec = tool.get("function", tool) if isinstance(tool, dict) else {}
    return {
        "type": "function",
        "name": spec.get("name"),
        "description": spec.get("description") or "",
        "parameters": spec.get("parameters") or {"type": "object", "properties": {}},
        "strict": False,
    }


def _items(message: Any) -> list[dict[str, Any]]:
    """The input items of one history message."""
    if not isinstance(message, dict):
        raise WorkerError("before_request: a history message is not an object")
    role = message.get("role")
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message.get("tool_call_id"), "output": text_of(message)}]
    if role != "assistant":
        return [{"type": "message", "role": role, "content": _input_content(message.get("content"))}]
    replay = [item for item in message.get("_responses_output") or [] if _is_replayed(item)]
    items = [_replayed(item) for item in replay]
    text = text_of(message)
    if text and not any(item.get("type") == "message" for item in replay):
        items.append({"type": "message", "role": "assistant", "content": text})
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        items.append(
            {
                "type": "function_call",
                "call_id": call.get("id"),
                "name": function.get("name"),
                "arguments": function.get("arguments") or "",
            }
        )
    return items


def _is_replayed(item: Any) -> bool:
    return isinstance(item, dict) and item.get("type") in ("reasoning", "message")


def _replayed(item: dict[str, Any]) -> dict[str, Any]:
    # Output-only fields are refused on input; id, summary and encrypted_content go back as they came.
    return {key: value for key, value in item.items() if key != "status"}


def _phased(item: dict[str, Any], index: int) -> dict[str, Any]:
    """A message output item as it is replayed: its text and refusal parts and ``phase``; no ``id``
    (with ``store: false`` the server keeps no item to refer to), no annotations or logprobs."""
    parts = []
    for part in item.get("content") or []:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "output_text":
            parts.append({"type": kind, "text": _text(part, "text", index)})
        elif kind == "refusal":
            parts.append({"type": kind, "refusal": _text(part, "refusal", index)})
    kept: dict[str, Any] = {"type": "message", "role": "assistant", "content": parts}
    if isinstance(item.get("phase"), str):
        kept["phase"] = item["phase"]
    return kept


def _input_content(content: Any) -> Any:
    """A user/system message's content as Responses input content (a string stays a string)."""
    if not isinstance(content, list):
        return content if isinstance(content, str) else ""
    parts = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            parts.append({"type": "input_text", "text": part.get("text") or ""})
        elif kind == "image_url":
            image = part.get("image_url")
            url = image.get("url") if isinstance(image, dict) else image
            parts.append({"type": "input_image", "image_url": url, "detail": "auto"})
    return parts


def history_reply(response: Any) -> dict[str, Any]:
    """The history reply of a Responses ``response`` object, or ``{"error": ...}`` when it cannot be one."""
    if not isinstance(response, dict):
        return _error("malformed_response", "the Responses answer is not an object")
    error = response.get("error")
    if isinstance(error, dict) and error:
        return {"error": error}
    status = response.get("status")
    if status == "incomplete":
        details = response.get("incomplete_details")
        reason = details.get("reason") if isinstance(details, dict) else None
        return _error(
            "incomplete_response",
            f"the response is incomplete ({reason or 'no reason given'}); it was rejected and nothing of it is kept",
        )
    if status != "completed":
        return _error("incomplete_response", f"the response did not complete (status {status!r}); it was rejected")
    output = response.get("output")
    if not isinstance(output, list):
        return _error("malformed_response", "the Responses answer has no output list")
    try:
        message = _assistant(output)
    except ValueError as exc:
        return _error("malformed_response", str(exc))
    reply: dict[str, Any] = {
        "message": message,
        "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
        "id": response.get("id"),
        "model": response.get("model"),
    }
    usage = _usage(response.get("usage"))
    if usage is not None:
        reply["usage"] = usage
    return reply


def _assistant(output: list[Any]) -> dict[str, Any]:
    runs, refusals, calls, replay = [""], [], [], []
    # A message with a ``phase`` ("commentary", "final_answer") must go back with it, so when any
    # has one every message item is replayed as it came, in order, instead of the joined text.
    phased = any(isinstance(item, dict) and item.get("type") == "message" and "phase" in item for item in output)
    for index, item in enumerate(output):
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            content = item.get("content") or []
            if not isinstance(content, list):
                raise ValueError(f"output[{index}].content is not a list of parts")
            for part in content:
                if isinstance(part, dict) and part.get("type") == "output_text":
                    runs[-1] += _text(part, "text", index)
                elif isinstance(part, dict) and part.get("type") == "refusal":
                    refusals.append(_text(part, "refusal", index))
            if phased:
                replay.append(_phased(item, index))
            continue
        runs.append("")  # another item separates the text around it
        if kind == "function_call":
            calls.append(_call(item, index))
        elif kind == "reasoning":
            replay.append(item)
    text = joined_runs(runs)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if refusals:
        message.update(content=joined_runs([text, "".join(refusals)]), _refusal=True)
    if calls:
        message["tool_calls"] = calls
    if replay:
        message["_responses_output"] = replay
    return message


def _text(part: dict[str, Any], key: str, index: int) -> str:
    value = part.get(key)
    if value is not None and not isinstance(value, str):
        raise ValueError(f"output[{index}] has a {part.get('type')} part whose {key} is not a string")
    return value or ""


def _call(item: dict[str, Any], index: int) -> dict[str, Any]:
    call_id, name, arguments = item.get("call_id"), item.get("name"), item.get("arguments", "")
    if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
        raise ValueError(f"output[{index}] is a function_call without a call_id and a name")
    if not isinstance(arguments, str):
        arguments = orjson.dumps(arguments).decode()
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _usage(usage: Any) -> dict[str, Any] | None:
    """Responses usage in the internal shape: cached and written tokens are inside ``input_tokens``."""
    if not isinstance(usage, dict):
        return None
    read, written = included_cache(usage.get("input_tokens"), usage.get("input_tokens_details"))
    return {
        "input_tokens": usage.get("input_tokens"),
        "output_tokens": usage.get("output_tokens"),
        "cache_read_tokens": read,
        "cache_creation_tokens": written,
    }


def _error(kind: str, message: str) -> dict[str, Any]:
    return {"error": {"type": kind, "message": message}}
