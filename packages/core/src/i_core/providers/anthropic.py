"""Anthropic Messages adapter: system prompt, tool_use/tool_result blocks, verbatim block replay."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from i_protocol.history import text_of

from ..errors import ProviderError
from .rejection import context_rejection
from .reply import (
    ModelReply,
    block_break,
    error_message,
    invalid_event,
    joined_runs,
    merge_extra_body,
    normalized_usage,
    optional,
    require,
    tool_specs,
    wire_index,
)

API_VERSION = "2023-06-01"
# Anthropic requires max_tokens; used only when the configuration leaves it unset.
DEFAULT_MAX_TOKENS = 4096
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
}


class AnthropicAdapter:
    """Anthropic Messages API (``/v1/messages``)."""

    name = "anthropic"

    def url(self, base_url: str) -> str:
        """``base_url`` (the host root, e.g. ``https://api.anthropic.com``) plus ``/v1/messages``."""
        return base_url.rstrip("/") + "/v1/messages"

    def headers(self, api_key: str | None) -> dict[str, str]:
        """JSON content type, the API version and, when configured, ``x-api-key``."""
        headers = {"content-type": "application/json", "accept": "application/json", "anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

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
        """The wire body: history[0] becomes ``system``; consecutive same-role messages are merged."""
        del use_max_tokens  # a Chat Completions choice; Anthropic has only max_tokens
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens or DEFAULT_MAX_TOKENS}
        rest = history
        if history and history[0].get("role") == "system":
            system = text_of(history[0])
            if system:
                body["system"] = system
            rest = history[1:]
        body["messages"] = _messages(rest)
        specs = tool_specs(tools)
        if specs:
            body["tools"] = [
                {"name": name, "description": description, "input_schema": params}
                for name, description, params in specs
            ]
        if stream:
            body["stream"] = True
        return merge_extra_body(body, extra_body)

    def parse_response(self, body: dict[str, Any]) -> ModelReply:
        """The internal assistant message of a ``message`` body; raw blocks kept in ``_anthropic_content``.

        Text blocks that another block (a server tool call, its results, thinking) separates are
        kept apart (``joined_runs``). ``stop_reason: "refusal"`` ends the answer as a refusal: the
        text before it is the answer, marked ``refusal``, and nothing of it is replayed but text.
        """
        problem = error_message(body) if isinstance(body, dict) else None
        if problem is not None:
            raise context_rejection(None, body) or ProviderError(f"model answered an error: {problem}")
        blocks = require(body, "content", list, "response")
        raw_finish = body.get("stop_reason")
        if not isinstance(raw_finish, str) or not raw_finish:
            raise ProviderError("malformed model response: response.stop_reason is missing")
        runs = [""]
        calls: list[dict[str, Any]] = []
        for index, block in enumerate(blocks):
            kind = require(block, "type", str, f"content[{index}]")
            if kind == "text":
                runs[-1] += require(block, "text", str, f"content[{index}]")
                continue
            runs.append("")
            if kind == "tool_use":
                where = f"content[{index}]"
                call_input = block.get("input", {})
                calls.append(
                    {
                        "id": require(block, "id", str, where),
                        "type": "function",
                        "function": {
                            "name": require(block, "name", str, where),
                            "arguments": orjson.dumps(call_input).decode(),
                        },
                    }
                )
        text = joined_runs(runs)
        message: dict[str, Any] = {"role": "assistant", "content": text or None}
        usage = body.get("usage")
        reply = ModelReply(
            message=message,
            finish_reason=_FINISH.get(raw_finish, f"other:{raw_finish}"),
            usage=_usage(usage) if isinstance(usage, dict) else None,
            raw=body,
        )
        if raw_finish == "refusal":
            # A refused turn must not come back as it was (Anthropic: reset or replace it); its
            # text, if any, is what the user saw.
            message.update(content=text, _refusal=True)
            reply.finish_reason = "stop"
            reply.meta["refusal"] = True
            return reply
        if calls:
            message["tool_calls"] = calls
        message["_anthropic_content"] = blocks
        return reply

    def stream_parser(self, on_text: Callable[[str], None]) -> _MessageStream:
        """An incremental parser of Messages stream events."""
        return _MessageStream(self, on_text)

    def parse_stream(self, events: Iterable[dict[str, Any]], on_text: Callable[[str], None]) -> ModelReply:
        """Assemble a streamed answer; ``on_text`` gets each text delta as it arrives."""
        parser = self.stream_parser(on_text)
        for event in events:
            parser.feed(event)
        return parser.finish()


def _usage(usage: dict[str, Any]) -> dict[str, int | None] | None:
    """Internal usage; ``input_tokens`` is reported as the TOTAL input: plain + cache read + cache creation."""
    plain, read, created = (
        usage.get("input_tokens"),
        usage.get("cache_read_input_tokens"),
        usage.get("cache_creation_input_tokens"),
    )
    parts = normalized_usage(plain, usage.get("output_tokens"), read, created)
    if parts is None:
        return None
    parts["input_tokens"] = (parts["input_tokens"] or 0) + (read or 0) + (created or 0)
    return parts


def _content_blocks(content: Any) -> list[dict[str, Any]]:
    """Internal content (string or parts) as Anthropic blocks; empty text is dropped (the API rejects it)."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    blocks = []
    for part in content:
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if part.get("text"):
                blocks.append({"type": "text", "text": part["text"]})
        elif kind == "image_url":
            blocks.append(_image_block(part.get("image_url")))
        else:
            raise ProviderError(f"content part of type {kind!r} cannot be sent to anthropic")
    return blocks


def _image_block(image_url: Any) -> dict[str, Any]:
    url = image_url.get("url") if isinstance(image_url, dict) else image_url
    if not isinstance(url, str):
        raise ProviderError("image_url part has no url")
    if not url.startswith("data:"):
        return {"type": "image", "source": {"type": "url", "url": url}}
    header, sep, data = url[5:].partition(",")
    media_type, _, encoding = header.partition(";")
    if not sep or encoding != "base64":
        raise ProviderError("image data URL must be base64 encoded (data:<type>;base64,...)")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _tool_input(arguments: Any) -> dict[str, Any]:
    """A tool_use input object; arguments that are not a JSON object (already answered as a tool
    error) are replayed as ``{}`` because the API accepts only objects."""
    if isinstance(arguments, dict):
        return arguments
    try:
        value = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    replay = message.get("_anthropic_content")
    if isinstance(replay, list):
        return copy.deepcopy(replay)  # thinking blocks and their signatures must go back byte for byte
    blocks = _content_blocks(message.get("content"))
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {}
        blocks.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": _tool_input(function.get("arguments")),
            }
        )
    return blocks


def _tool_result_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.get("tool_call_id")}
    block["content"] = content if isinstance(content, str) else _content_blocks(content)
    if message.get("_is_error") is True:
        block["is_error"] = True
    return block


def _messages(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wire messages; tool results become user tool_result blocks and same-role neighbours merge."""
    wire: list[dict[str, Any]] = []
    for message in history:
        role = message.get("role")
        if role == "assistant":
            wire_role, blocks = "assistant", _assistant_blocks(message)
        elif role == "tool":
            wire_role, blocks = "user", [_tool_result_block(message)]
        elif role in ("user", "system"):
            # Only history[0] is the system prompt; a later system message is context, sent as user text.
            wire_role, blocks = "user", _content_blocks(message.get("content"))
        else:
            raise ProviderError(f"history message with role {role!r} cannot be sent to anthropic")
        if not blocks:
            continue
        if wire and wire[-1]["role"] == wire_role:
            wire[-1]["content"].extend(blocks)
        else:
            wire.append({"role": wire_role, "content": blocks})
    return wire


class _MessageStream:
    """Rebuilds a ``message`` body from stream events, then parses it like a non-streamed answer."""

    def __init__(self, adapter: AnthropicAdapter, on_text: Callable[[str], None]) -> None:
        self._adapter = adapter
        self._on_text = on_text
        self._message: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._json: dict[int, list[str]] = {}
        self._usage: dict[str, Any] = {}
        self._stop: str | None = None
        self._shown = ""  # the last characters shown (they decide the break before a new run)
        self._separated = False  # a non-text block started after shown text

    def feed(self, event: dict[str, Any]) -> None:
        """Take one decoded event (its ``type`` names it)."""
        kind = event.get("type")
        if kind == "error":
            raise context_rejection(None, event) or ProviderError(
                f"model stream reported an error: {error_message(event) or 'unknown error'}"
            )
        if kind == "message_start":
            self._message = dict(optional(event, "message", dict, "message_start") or {})
            self._usage.update(optional(self._message, "usage", dict, "message_start.message") or {})
        elif kind == "content_block_start":
            index = wire_index(event, "index", kind, len(self._blocks))
            block = dict(optional(event, "content_block", dict, kind) or {})
            if block.get("type") == "tool_use":
                self._json[index] = []
            if block.get("type") != "text":
                self._separated = bool(self._shown)
            self._blocks[index] = block
        elif kind == "content_block_delta":
            self._delta(wire_index(event, "index", kind, 0), optional(event, "delta", dict, kind) or {})
        elif kind == "content_block_stop":
            self._close_block(wire_index(event, "index", kind, 0))
        elif kind == "message_delta":
            delta = optional(event, "delta", dict, kind) or {}
            stop = optional(delta, "stop_reason", str, f"{kind}.delta")
            if stop:
                self._stop = stop
            self._usage.update(optional(event, "usage", dict, kind) or {})

    def _delta(self, index: int, delta: dict[str, Any]) -> None:
        block = self._blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        where = f"content_block_delta({kind!r}).delta"
        if kind == "text_delta":
            text = optional(delta, "text", str, where) or ""
            block["text"] = _text_field(block, "text", index) + text
            if text:
                shown = block_break(self._shown, text) + text if self._separated else text
                self._separated = False
                self._shown = (self._shown + shown)[-2:]
                self._on_text(shown)
        elif kind == "input_json_delta":
            self._json.setdefault(index, []).append(optional(delta, "partial_json", str, where) or "")
        elif kind == "thinking_delta":
            block["thinking"] = _text_field(block, "thinking", index) + (optional(delta, "thinking", str, where) or "")
        elif kind == "signature_delta":
            signature = optional(delta, "signature", str, where) or ""
            block["signature"] = _text_field(block, "signature", index) + signature

    def _close_block(self, index: int) -> None:
        pieces = self._json.pop(index, None)
        if pieces is None:
            return
        text = "".join(pieces)
        try:
            self._blocks[index]["input"] = orjson.loads(text) if text else {}
        except orjson.JSONDecodeError:
            raise ProviderError(f"model stream sent invalid JSON for tool_use input of block {index}")

    def raw(self) -> dict[str, Any]:
        """The ``message`` body the events so far amount to (not validated; for after_response).

        Tool inputs still being streamed appear as parsed objects when complete, else as their partial text.
        """
        blocks = []
        for index, block in sorted(self._blocks.items()):
            pieces = self._json.get(index)
            if pieces is not None:
                text = "".join(pieces)
                try:
                    block = {**block, "input": orjson.loads(text) if text else {}}
                except orjson.JSONDecodeError:
                    block = {**block, "input": text}
            blocks.append(block)
        raw = {**self._message, "type": "message", "role": "assistant", "content": blocks, "stop_reason": self._stop}
        if self._usage:
            raw["usage"] = self._usage
        return raw

    def finish(self, *, ended: bool = False) -> ModelReply:
        """The assembled reply; a stream without a stop_reason is incomplete (Anthropic always
        sends one, so ``ended`` changes nothing here)."""
        del ended
        if self._stop is None:
            raise ProviderError("model stream ended without a stop_reason (incomplete answer)")
        for index in list(self._json):
            self._close_block(index)
        return self._adapter.parse_response(self.raw())


def _text_field(block: dict[str, Any], key: str, index: int) -> str:
    """The text a block's ``content_block_start`` gave ``key`` (its deltas are appended to it)."""
    value = block.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise invalid_event(f"content_block_start(index {index}).content_block.{key}", value, "a string")
    return value
