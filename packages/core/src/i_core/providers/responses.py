"""The ``responses`` protocol (OpenAI Responses API): the core's half of it.

Who does what (the `responses` module is bundled, ``i --runtime worker responses``, and may be
replaced through bindings.json):

- The core builds a **history-format body** (``build_body``): ``{"model", "messages": history
  (with its ``_responses_output`` replay data), "tools": [Chat-style function tools],
  "max_output_tokens"?, "stream"?, "store": false}`` plus ``extra_body``.
- ``before_request`` (the module) turns it into the Responses request (``instructions``,
  ``input`` items, function tools, ``include``); later hooks (the cache) see the wire body.
- The core posts it to ``base_url + "/responses"`` and reads the answer: a JSON ``response``
  object, or the typed SSE events (``_ResponsesStream``), whose text is shown as it arrives and
  which are rebuilt into that same ``response`` object.
- ``after_response`` hooks see that object first (the cache observes its usage), then the module
  turns it into a **history reply** (``parse_response`` reads it) or rejects it: an incomplete,
  failed or unfinished response comes back as ``{"error": {...}}``, which the core raises.

No hidden server state: the body always says ``store: false`` and carries the full input;
``extra_body`` may not set ``previous_response_id``, ``store`` or ``conversation``, and a body
that reaches the wire with either is refused (``check_wire``). So nothing on the server has to be
cleared after a compaction (seed 004): the next request simply sends the compacted history.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..errors import ProviderError
from .rejection import context_rejection
from .reply import (
    ModelReply,
    bearer_headers,
    block_break,
    chat_tools,
    error_message,
    invalid_event,
    merge_extra_body,
    normalized_usage,
    optional,
    require,
)

STATE_FIELDS = ("previous_response_id", "store", "conversation")
"""Responses fields that would keep conversation state on the server; the core owns them."""


class ResponsesAdapter:
    """OpenAI Responses API (``/responses``); the wire transform is the `responses` module's."""

    name = "responses"

    def url(self, base_url: str) -> str:
        """``base_url`` (the API root, e.g. ``https://api.openai.com/v1``) plus ``/responses``."""
        return base_url.rstrip("/") + "/responses"

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
        """The history-format body that ``before_request`` (the module) turns into the wire request."""
        del use_max_tokens  # a Chat Completions choice; Responses has only max_output_tokens
        clashes = sorted(key for key in extra_body or {} if key in STATE_FIELDS)
        if clashes:
            raise ProviderError(
                f"extra_body may not set {', '.join(clashes)}: the core sends store: false and the full "
                "input on every request, so no conversation state lives on the server"
            )
        body: dict[str, Any] = {"model": model, "messages": history, "store": False}
        functions = chat_tools(tools)
        if functions:
            body["tools"] = functions
        if max_tokens is not None:
            body["max_output_tokens"] = max_tokens
        if stream:
            body["stream"] = True
        return merge_extra_body(body, extra_body)

    def check_wire(self, body: dict[str, Any], omit: tuple[str, ...] = ()) -> None:
        """Refuse a body about to be sent that would lean on server state or lacks its input;
        ``store`` may be absent only when config.json's ``omit_fields`` leaves it out."""
        store_ok = body.get("store") is False or ("store" in omit and "store" not in body)
        if "previous_response_id" in body or "conversation" in body or not store_ok:
            raise ProviderError(
                "a before_request hook left server state in the Responses request (previous_response_id, "
                "conversation, or store not false); refused: the core sends the full input every time"
            )
        if "messages" in body or not isinstance(body.get("input"), list | str):
            raise ProviderError(
                "the Responses request has no input items: the responses module's before_request turns "
                "the history into them (is it in the manifest?)"
            )

    def parse_response(self, body: dict[str, Any]) -> ModelReply:
        """The reply in a **history reply** (what the module's after_response answers):
        ``{"message": {assistant message}, "finish_reason", "usage"?: {input_tokens, output_tokens,
        cache_read_tokens?, cache_creation_tokens?}}``, or ``{"error": {...}}`` for a rejected one."""
        problem = error_message(body) if isinstance(body, dict) else None
        if problem is not None:
            raise context_rejection(None, body) or ProviderError(f"model answered an error: {problem}")
        if isinstance(body, dict) and (body.get("object") == "response" or "output" in body):
            raise ProviderError(
                "the Responses answer was not converted to the history format: that is the responses "
                "module's after_response (is it in the manifest?)"
            )
        message = dict(require(body, "message", dict, "history reply"))
        if message.get("role") != "assistant":
            raise ProviderError("malformed history reply: message.role is not 'assistant'")
        content = message.get("content")
        if content is not None and not isinstance(content, str):
            raise ProviderError("malformed history reply: message.content is not a string or null")
        calls = message.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise ProviderError("malformed history reply: message.tool_calls is not a list")
        finish = require(body, "finish_reason", str, "history reply")
        usage = body.get("usage")
        meta = {"refusal": True} if message.get("_refusal") is True else {}
        return ModelReply(
            message=message,
            finish_reason=finish,
            usage=_usage(usage) if isinstance(usage, dict) else None,
            raw=body,
            meta=meta,
        )

    def stream_parser(self, on_text: Callable[[str], None]) -> _ResponsesStream:
        """An incremental parser of the typed Responses SSE events."""
        return _ResponsesStream(self, on_text)

    def parse_stream(self, events: Iterable[dict[str, Any]], on_text: Callable[[str], None]) -> ModelReply:
        """Feed ``events``, then read the result (a history reply only after after_response)."""
        parser = self.stream_parser(on_text)
        for event in events:
            parser.feed(event)
        return parser.finish()


def _usage(usage: dict[str, Any]) -> dict[str, int | None] | None:
    return normalized_usage(
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        usage.get("cache_read_tokens"),
        usage.get("cache_creation_tokens"),
    )


_FINAL = frozenset({"response.completed", "response.incomplete", "response.failed"})


class _ResponsesStream:
    """Rebuilds the ``response`` object from typed SSE events, showing text as it arrives.

    The final event (``response.completed``, ``response.incomplete``, ``response.failed``) carries
    the whole response, which wins; until then the response is the one ``response.created`` gave,
    with the output items rebuilt from ``output_item.added``/``.done`` and the text and argument
    deltas (so a stream cut midway still shows after_response what it carried). An ``error`` event
    is raised at once (a context rejection when it says so).
    """

    def __init__(self, adapter: ResponsesAdapter, on_text: Callable[[str], None]) -> None:
        self._adapter = adapter
        self._on_text = on_text
        self._response: dict[str, Any] = {}
        self._final: dict[str, Any] | None = None
        self._items: dict[int, dict[str, Any]] = {}
        self._shown = ""  # the last characters shown (they decide the break before a new run)
        self._separated = False  # a non-message item started after shown text
        self._error: Any = None

    def feed(self, event: dict[str, Any]) -> None:
        """Take one decoded event (its ``type`` names it)."""
        kind = optional(event, "type", str, "event")
        if kind == "error":
            self._error = {key: event[key] for key in ("code", "message", "param") if key in event}
            wrapped = {"error": self._error}
            raise context_rejection(None, wrapped) or ProviderError(
                f"model stream reported an error: {error_message(wrapped) or 'unknown error'}"
            )
        if kind in ("response.created", "response.in_progress") and isinstance(event.get("response"), dict):
            self._response = dict(event["response"])
        elif kind in _FINAL and isinstance(event.get("response"), dict):
            self._final = event["response"]
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(event, done=kind.endswith("done"))
        elif kind in ("response.output_text.delta", "response.refusal.delta"):
            self._text(event, "text" if kind == "response.output_text.delta" else "refusal")
        elif kind == "response.function_call_arguments.delta":
            item = self._items.setdefault(_index(event), {"type": "function_call", "arguments": ""})
            item["arguments"] = str(item.get("arguments") or "") + str(event.get("delta") or "")

    def _item(self, event: dict[str, Any], *, done: bool) -> None:
        item = event.get("item")
        if not isinstance(item, dict):
            return
        index = _index(event)
        if not done and item.get("type") != "message":
            self._separated = bool(self._shown)
        self._items[index] = dict(item) if done or index not in self._items else {**self._items[index], **item}

    def _text(self, event: dict[str, Any], field: str) -> None:
        delta = event.get("delta")
        if not isinstance(delta, str) or not delta:
            return
        index = _index(event)
        item = self._items.setdefault(index, {"type": "message", "role": "assistant", "content": []})
        parts = item.setdefault("content", [])
        if not isinstance(parts, list):
            raise invalid_event(f"output item {index}.content", parts, "a list")
        kind = "output_text" if field == "text" else "refusal"
        if not parts or not isinstance(parts[-1], dict) or parts[-1].get("type") != kind:
            parts.append({"type": kind, field: ""})
        before = parts[-1].get(field)
        if before is not None and not isinstance(before, str):
            raise invalid_event(f"output item {index}.content[-1].{field}", before, "a string")
        parts[-1][field] = (before or "") + delta
        shown = block_break(self._shown, delta) + delta if self._separated else delta
        self._separated = False
        self._shown = (self._shown + shown)[-2:]
        self._on_text(shown)

    def raw(self) -> dict[str, Any]:
        """The ``response`` object the events so far amount to (not validated; for after_response)."""
        if self._final is not None:
            return self._final
        raw = {**self._response, "object": "response", "output": [item for _, item in sorted(self._items.items())]}
        raw.setdefault("status", "in_progress")
        if self._error is not None:
            raw["error"] = self._error
        return raw

    def finish(self, *, ended: bool = False) -> ModelReply:
        """The reply, read from the raw response: a history reply only once after_response converted
        it, so this refuses an unconverted stream (``exchange`` passes the converted one instead)."""
        del ended  # Responses streams end with a final event, not [DONE]
        return self._adapter.parse_response(self.raw())


def _index(event: dict[str, Any]) -> int:
    index = event.get("output_index")
    return index if isinstance(index, int) and not isinstance(index, bool) else 0
