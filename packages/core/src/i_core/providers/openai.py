"""Chat Completions adapters: ``openai`` and ``deepseek`` (reasoning replay and cache usage)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..errors import ProviderError
from .rejection import context_rejection
from .reply import (
    ModelReply,
    bearer_headers,
    block_break,
    chat_tools,
    error_message,
    included_cache,
    invalid_event,
    joined_runs,
    merge_extra_body,
    normalized_usage,
    optional,
    require,
    wire_index,
)

# Message fields Chat Completions accepts; everything else (``_`` replay data, reasoning) stays local.
_WIRE_FIELDS = ("role", "content", "tool_calls", "tool_call_id", "name")
_FINISH = {"stop": "stop", "tool_calls": "tool_calls", "length": "length", "content_filter": "content_filter"}


class OpenAIAdapter:
    """OpenAI Chat Completions (also any OpenAI-compatible server)."""

    name = "openai"

    def url(self, base_url: str) -> str:
        """``base_url`` (the API root, e.g. ``.../v1``) plus ``/chat/completions``."""
        return base_url.rstrip("/") + "/chat/completions"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON content type and, when a key is configured, a Bearer authorisation."""
        return bearer_headers(api_key)

    def build_body(
        self,
        *,
        model: str,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None,
        max_tokens: int | None,
        use_max_tokens: bool,
        stream: bool,
        extra_body: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """The wire body for ``history``; extra_body is merged last and may not touch control fields."""
        body: dict[str, Any] = {"model": model, "messages": self._messages(history)}
        functions = chat_tools(tools)
        if functions:
            body["tools"] = functions
        if max_tokens is not None:
            body["max_tokens" if use_max_tokens else "max_completion_tokens"] = max_tokens
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return merge_extra_body(body, extra_body)

    def _messages(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [_wire_message(message) for message in history]

    def parse_response(self, body: dict[str, Any]) -> ModelReply:
        """The internal assistant message of a complete chat.completion body.

        Beyond the official API (each case seen from a real server; the core README lists them):
        ``finish_reason`` missing, null or "" is inferred from the content (tool calls ->
        ``tool_calls``, else ``stop``) and marked ``finish_inferred``; ``content`` may be a list of
        parts (text is the answer, thinking parts become ``reasoning_content``); a ``refusal``
        becomes the answer, after any text, marked ``refusal``.
        """
        problem = error_message(body) if isinstance(body, dict) else None
        if problem is not None:
            raise context_rejection(None, body) or ProviderError(f"model answered an error: {problem}")
        choices = require(body, "choices", list, "response")
        if not choices:
            raise ProviderError("malformed model response: response.choices is empty")
        choice = choices[0]
        wire = require(choice, "message", dict, "choices[0]")
        raw_finish = choice.get("finish_reason")
        if raw_finish is not None and not isinstance(raw_finish, str):
            raise ProviderError(f"malformed model response: choices[0].finish_reason is a {type(raw_finish).__name__}")
        content, thinking = _content(wire.get("content"))
        meta: dict[str, Any] = {}
        refusal = wire.get("refusal")
        if isinstance(refusal, str) and refusal:
            content = joined_runs([content or "", refusal])
            meta["refusal"] = True
        message: dict[str, Any] = {"role": "assistant", "content": content}
        calls = _tool_calls(wire.get("tool_calls"))
        if calls:
            message["tool_calls"] = calls
        reasoning = wire.get("reasoning_content")
        reasoning = reasoning if isinstance(reasoning, str) and reasoning else thinking
        if reasoning:
            message["reasoning_content"] = reasoning
        if meta.get("refusal"):
            message["_refusal"] = True
        if raw_finish:
            finish = _FINISH.get(raw_finish, f"other:{raw_finish}")
        else:
            finish = "tool_calls" if calls else "stop"
            meta["finish_inferred"] = True
        usage = body.get("usage")
        return ModelReply(
            message=message,
            finish_reason=finish,
            usage=self.usage(usage) if isinstance(usage, dict) else None,
            raw=body,
            meta=meta,
        )

    def usage(self, usage: dict[str, Any]) -> dict[str, int | None] | None:
        """Internal usage: prompt tokens already include the cached and the written ones."""
        read, written = included_cache(usage.get("prompt_tokens"), usage.get("prompt_tokens_details"))
        return normalized_usage(usage.get("prompt_tokens"), usage.get("completion_tokens"), read, written)

    def stream_parser(self, on_text: Callable[[str], None]) -> _ChatStream:
        """An incremental parser of chat.completion.chunk events."""
        return _ChatStream(self, on_text)

    def parse_stream(self, events: Iterable[dict[str, Any]], on_text: Callable[[str], None]) -> ModelReply:
        """Assemble a streamed answer; ``on_text`` gets each text delta as it arrives."""
        parser = self.stream_parser(on_text)
        for event in events:
            parser.feed(event)
        return parser.finish()


class DeepSeekAdapter(OpenAIAdapter):
    """DeepSeek Chat Completions: ``reasoning_content`` replay and hit/miss cache usage.

    DeepSeek's thinking-mode rule: within one user turn (between two user messages) where the model
    called tools, every assistant ``reasoning_content`` must be sent back in all later requests
    (else HTTP 400); in a turn without tool calls it is not part of the context (older
    deepseek-reasoner even rejects it). So it is replayed exactly for tool-calling turns.
    """

    name = "deepseek"

    def _messages(self, history: list[dict[str, Any]]) -> list[dict[str, Any]]:
        wire = super()._messages(history)
        for start, end in _user_turns(history):
            if not any(
                history[i].get("role") == "assistant" and history[i].get("tool_calls") for i in range(start, end)
            ):
                continue
            for i in range(start, end):
                reasoning = history[i].get("reasoning_content", history[i].get("_reasoning_content"))
                if history[i].get("role") == "assistant" and isinstance(reasoning, str):
                    wire[i]["reasoning_content"] = reasoning
        return wire

    def usage(self, usage: dict[str, Any]) -> dict[str, int | None] | None:
        """Internal usage: ``prompt_tokens`` = hit + miss; hit is the cache read."""
        hit, miss = usage.get("prompt_cache_hit_tokens"), usage.get("prompt_cache_miss_tokens")
        prompt = usage.get("prompt_tokens")
        if prompt is None and isinstance(hit, int) and isinstance(miss, int):
            prompt = hit + miss
        if hit is None:
            details = usage.get("prompt_tokens_details")
            hit = details.get("cached_tokens") if isinstance(details, dict) else None
        return normalized_usage(prompt, usage.get("completion_tokens"), hit, None)


def _wire_message(message: dict[str, Any]) -> dict[str, Any]:
    """A history message as Chat Completions takes it: no ``_`` fields, on the message or a part."""
    wire = {key: message[key] for key in _WIRE_FIELDS if key in message}
    calls = wire.get("tool_calls")
    if isinstance(calls, list) and any(isinstance(c, dict) and any(k[:1] == "_" for k in c) for c in calls):
        # ``_original_id`` (a renamed duplicate id, call_ids.py) stays local.
        wire["tool_calls"] = [
            {k: v for k, v in call.items() if k[:1] != "_"} if isinstance(call, dict) else call for call in calls
        ]
    content = wire.get("content")
    if isinstance(content, list) and any(isinstance(p, dict) and any(k[:1] == "_" for k in p) for p in content):
        wire["content"] = [
            {k: v for k, v in part.items() if k[:1] != "_"} if isinstance(part, dict) else part for part in content
        ]
    return wire


def _user_turns(history: list[dict[str, Any]]) -> list[tuple[int, int]]:
    """Index ranges [start, end) of the stretches between consecutive user messages."""
    bounds = [i for i, message in enumerate(history) if message.get("role") == "user"]
    starts = [0, *bounds]
    ends = [*bounds, len(history)]
    return list(zip(starts, ends, strict=True))


def _tool_calls(calls: Any) -> list[dict[str, Any]]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise ProviderError("malformed model response: message.tool_calls is not a list")
    result = []
    for index, call in enumerate(calls):
        where = f"message.tool_calls[{index}]"
        function = require(call, "function", dict, where)
        call_id = require(call, "id", str, where)
        name = require(function, "name", str, f"{where}.function")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, str):
            # Some compatible servers send an object; the internal format always holds the JSON text.
            arguments = orjson.dumps(arguments).decode()
        result.append({"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}})
    return result


def _content(content: Any) -> tuple[str | None, str | None]:
    """(answer text, thinking text) of ``message.content``: a string, or a list of parts.

    Mistral's thinking models answer ``[{"type": "thinking", "thinking": [text parts]}, {"type":
    "text", "text": ...}]``; text separated by another part is kept apart (``joined_runs``).
    """
    if content is None or isinstance(content, str):
        return content, None
    if not isinstance(content, list):
        raise ProviderError("malformed model response: choices[0].message.content is not a string or a list of parts")
    runs, thinking = [""], []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text" and isinstance(part.get("text"), str):
            runs[-1] += part["text"]
        elif kind == "thinking":
            thinking.append(_thinking_text(part.get("thinking")))
            runs.append("")
        else:
            runs.append("")  # an image or a reference part: no text, but it separates what is around it
    return joined_runs(runs) or None, "".join(thinking) or None


def _thinking_text(thinking: Any) -> str:
    """The text of a thinking part: a string, or a list of text parts."""
    if isinstance(thinking, str):
        return thinking
    if isinstance(thinking, list):
        return "".join(p["text"] for p in thinking if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


class _ChatStream:
    """Rebuilds a chat.completion body from chunks, then parses it like a non-streamed answer.

    Also read (real servers send them): a tool name repeated in full in a later delta is set once
    (names are never split; arguments are); ``delta.content`` as a list of parts (Mistral: thinking
    parts go to the reasoning); ``delta.refusal`` (the refusal, shown as the answer); an error chunk
    that carries usage (OpenRouter), kept for ``after_response`` before the error is raised.
    """

    def __init__(self, adapter: OpenAIAdapter, on_text: Callable[[str], None]) -> None:
        self._adapter = adapter
        self._on_text = on_text
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, dict[str, Any]] = {}
        self._finish: str | None = None
        self._usage: Any = None
        self._error: Any = None
        self._meta: dict[str, Any] = {}
        self._separated = False  # a thinking part came after text: the next text starts a new run

    def feed(self, event: dict[str, Any]) -> None:
        """Take one decoded chunk."""
        for key in ("id", "model", "created", "system_fingerprint"):
            if key in event and key not in self._meta:
                self._meta[key] = event[key]
        if event.get("usage") is not None:
            self._usage = event["usage"]
        problem = error_message(event)
        if problem is not None:
            self._error = event["error"]
            raise context_rejection(None, event) or ProviderError(f"model stream reported an error: {problem}")
        for number, choice in enumerate(optional(event, "choices", list, "chunk") or []):
            where = f"chunk.choices[{number}]"
            if not isinstance(choice, dict):
                raise invalid_event(where, choice, "an object")
            if wire_index(choice, "index", where, 0) != 0:
                continue
            delta = optional(choice, "delta", dict, where) or {}
            content = optional(delta, "content", (str, list), f"{where}.delta")
            self._content(content)
            refusal = delta.get("refusal")
            if isinstance(refusal, str) and refusal:
                # The refusal is the answer's last run: apart from any text before it, as parsed.
                shown = refusal if self._refusal else block_break("".join(self._text), refusal) + refusal
                self._refusal.append(refusal)
                self._on_text(shown)
            reasoning = delta.get("reasoning_content")
            if isinstance(reasoning, str):
                self._reasoning.append(reasoning)
            calls = optional(delta, "tool_calls", list, f"{where}.delta") or []
            for position, call in enumerate(calls):
                self._add_call_delta(call, f"{where}.delta.tool_calls[{position}]")
            finish = optional(choice, "finish_reason", str, where)
            if finish:
                self._finish = finish

    def _content(self, content: Any) -> None:
        if isinstance(content, str):
            self._add_text(content)
            return
        for part in content if isinstance(content, list) else []:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text" and isinstance(part.get("text"), str):
                self._add_text(part["text"])
            elif kind == "thinking":
                self._reasoning.append(_thinking_text(part.get("thinking")))
                self._separated = bool(self._text)

    def _add_text(self, text: str) -> None:
        if not text:
            return
        if self._separated:
            text = block_break("".join(self._text), text) + text
            self._separated = False
        self._text.append(text)
        self._on_text(text)

    def _add_call_delta(self, call: Any, where: str) -> None:
        if not isinstance(call, dict):
            raise invalid_event(where, call, "an object")
        index = wire_index(call, "index", where, len(self._calls))
        slot = self._calls.setdefault(index, {"id": None, "name": "", "arguments": []})
        call_id = optional(call, "id", str, where)
        if call_id:
            slot["id"] = call_id
        function = optional(call, "function", dict, where) or {}
        name = optional(function, "name", str, f"{where}.function")
        if name and not slot["name"]:
            slot["name"] = name
        arguments = optional(function, "arguments", (str, dict), f"{where}.function")
        if isinstance(arguments, dict):
            # As in a whole answer: some compatible servers send an object; history holds its JSON text.
            arguments = orjson.dumps(arguments).decode()
        if arguments:
            slot["arguments"].append(arguments)

    def raw(self) -> dict[str, Any]:
        """The chat.completion body the events so far amount to (not validated; for after_response)."""
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self._text) if self._text else None}
        if self._refusal:
            message["refusal"] = "".join(self._refusal)
        if self._calls:
            message["tool_calls"] = [
                {
                    "id": slot["id"],
                    "type": "function",
                    "function": {"name": slot["name"], "arguments": "".join(slot["arguments"])},
                }
                for _, slot in sorted(self._calls.items())
            ]
        if self._reasoning:
            message["reasoning_content"] = "".join(self._reasoning)
        raw: dict[str, Any] = {
            **self._meta,
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": self._finish}],
        }
        if self._usage is not None:
            raw["usage"] = self._usage
        if self._error is not None:
            raw["error"] = self._error
        return raw

    def finish(self, *, ended: bool = False) -> ModelReply:
        """The assembled reply. A stream that reached ``[DONE]`` is complete even without a
        finish_reason (inferred from the content); one that did not, and never said why it
        stopped, was cut."""
        if self._finish is None and not ended:
            raise ProviderError("model stream ended without a finish_reason or [DONE] (incomplete answer)")
        return self._adapter.parse_response(self.raw())
