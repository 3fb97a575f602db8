"""The client side of a provider worker: one ``provider_request`` frame per model request.

A provider worker (config.json ``provider``, else the manifest's top-level ``provider``, which
already won over a bindings.json binding) does the wire exchange itself, so it can speak a wire
the core does not. The core hands it the request in the history format, after ``before_request``::

    {"url": base_url, "protocol": "...", "model": "...", "timeout": 600.0, "request_meta": {...},
     "body": {"model", "messages": [history format], "tools"?: [{"type": "function", ...}],
              "max_tokens", ...extra_body}}

and gets back one complete reply::

    {"message": {"role": "assistant", "content": ..., "tool_calls"?: [...]},
     "finish_reason": "stop", "usage": {"input_tokens", "output_tokens", ...} | null,
     "response": {the provider's raw answer, for after_response}, "retries"?: [{"attempt", "reason"}]}

The deadline is the request ``timeout``; a failed call is never re-sent (the provider may retry
inside its call and reports each retry, announced as ``request_retry``). No streaming: the
console prints the whole answer. A failure is an error, never the built-in adapter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from i_protocol.history import HistoryError, check_tool_calls

from ..errors import HookResultError
from ..pool import describe_worker
from .reply import ModelReply, chat_tools, merge_extra_body, normalized_usage

if TYPE_CHECKING:
    from ..manifest import Exec
    from ..pool import WorkerPool

EVENT = "provider_request"


def provider_body(
    *,
    model: str,
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]] | None,
    max_tokens: int,
    extra_body: dict[str, Any] | None,
) -> dict[str, Any]:
    """The history-format request a provider receives: Chat-Completions-shaped, private fields kept."""
    body: dict[str, Any] = {"model": model, "messages": history, "max_tokens": max_tokens}
    functions = chat_tools(tools)
    if functions:
        body["tools"] = functions
    return merge_extra_body(body, extra_body)


def provider_exchange(
    pool: WorkerPool,
    spec: Exec,
    context: dict[str, Any],
    request: dict[str, Any],
    *,
    timeout: float,
    on_retry: Callable[[int, str], None],
    on_raw: Callable[[dict[str, Any]], object],
) -> ModelReply:
    """Send one ``provider_request`` under ``timeout`` and return its checked reply.

    The provider's reported retries are announced first, then ``on_raw`` sees its raw response
    (before the reply is checked, as with the built-in adapters).
    """
    answer = pool.call(spec, EVENT, request, context, module="provider", deadline=timeout)
    try:
        for attempt, reason in _retries(answer.get("retries")):
            on_retry(attempt, reason)
        raw = answer.get("response", {})
        if not isinstance(raw, dict):
            raise HookResultError("a response that is not an object (the raw answer for after_response)")
        on_raw(raw)
        return _reply(answer)
    except HookResultError as exc:
        raise HookResultError(f"the model provider ({describe_worker(spec)}) answered {exc}") from None


def _retries(value: object) -> list[tuple[int, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise HookResultError("retries that are not a list of {attempt, reason}")
    found = []
    for index, item in enumerate(value):
        attempt = item.get("attempt") if isinstance(item, dict) else None
        reason = item.get("reason") if isinstance(item, dict) else None
        if isinstance(attempt, bool) or not isinstance(attempt, int) or attempt < 1 or not isinstance(reason, str):
            raise HookResultError(f"retries[{index}] that is not {{attempt: a positive integer, reason: text}}")
        found.append((attempt, reason))
    return found


def _reply(answer: dict[str, Any]) -> ModelReply:
    message = answer.get("message")
    if not isinstance(message, dict) or message.get("role") != "assistant":
        raise HookResultError("no message, or one whose role is not assistant")
    content = message.get("content")
    if content is not None and not isinstance(content, str | list):
        raise HookResultError("a message whose content is neither text, a list of parts nor null")
    calls = message.get("tool_calls")
    if calls is not None and not isinstance(calls, list):
        raise HookResultError("tool_calls that are not a list")
    if calls:
        # The provider translated them: a broken call is its contract broken, not the model's.
        try:
            check_tool_calls(calls, "message")
        except HistoryError as exc:
            raise HookResultError(f"invalid tool calls: {exc}") from None
    finish = answer.get("finish_reason")
    if not isinstance(finish, str) or not finish:
        raise HookResultError("no finish_reason")
    return ModelReply(message=dict(message), finish_reason=finish, usage=_usage(answer.get("usage")), raw=answer)


def _usage(value: object) -> dict[str, int | None] | None:
    """The reply's usage in the internal shape; absent or null is unknown (never 0)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise HookResultError("usage that is neither an object nor null")
    return normalized_usage(
        value.get("input_tokens"),
        value.get("output_tokens"),
        value.get("cache_read_tokens"),
        value.get("cache_creation_tokens"),
    )
