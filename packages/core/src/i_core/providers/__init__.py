"""Model protocol adapters: the internal history format to each provider's wire format and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..errors import ModelError, ProviderError
from .anthropic import AnthropicAdapter
from .openai import DeepSeekAdapter, OpenAIAdapter
from .rejection import context_rejection
from .reply import RESERVED_FIELDS, Adapter, ModelReply, StreamParser

if TYPE_CHECKING:
    from ..transport import Transport

__all__ = [
    "RESERVED_FIELDS",
    "Adapter",
    "AnthropicAdapter",
    "DeepSeekAdapter",
    "ModelReply",
    "OpenAIAdapter",
    "ProviderError",
    "StreamParser",
    "context_rejection",
    "exchange",
    "get_adapter",
]

PROTOCOLS = ("openai", "deepseek", "anthropic")


def get_adapter(protocol: str) -> Adapter:
    """The adapter of a configured ``protocol``; ``responses`` is named but not built in this version."""
    if protocol == "openai":
        return OpenAIAdapter()
    if protocol == "deepseek":
        return DeepSeekAdapter()
    if protocol == "anthropic":
        return AnthropicAdapter()
    if protocol == "responses":
        raise ProviderError(
            'protocol "responses" (OpenAI Responses API) is not implemented in this version; '
            'use "openai" (Chat Completions), which OpenAI and compatible servers also serve'
        )
    raise ProviderError(f"unknown protocol {protocol!r}; known protocols: {', '.join(PROTOCOLS)}")


def exchange(
    adapter: Adapter,
    transport: Transport,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    on_retry: Callable[[int, str], None],
    on_text: Callable[[str], None] | None = None,
    on_raw: Callable[[dict[str, Any]], None] | None = None,
) -> ModelReply:
    """POST ``body`` and parse the answer; streams when ``body["stream"]`` is true, text going to ``on_text``.

    ``on_raw`` sees the provider's body (rebuilt from the events when streamed) BEFORE the adapter
    validates it, so usage observers (after_response) also see answers the adapter then rejects,
    and streams that failed after they began (an error chunk, a broken connection) with what they
    carried: OpenRouter reports the usage of a failed generation in its error chunk.
    """
    if body.get("stream") is True:
        parser = adapter.stream_parser(on_text or (lambda _text: None))
        fed = 0

        def feed(event: dict[str, Any]) -> None:
            nonlocal fed
            fed += 1
            parser.feed(event)

        try:
            result = transport.post(url, body, headers, stream=True, on_retry=on_retry, on_event=feed)
        except ModelError:
            if on_raw is not None and fed:
                on_raw(parser.raw())
            raise
        assert not isinstance(result, dict)
        if on_raw is not None:
            on_raw(parser.raw())
        return parser.finish(ended=result.done)
    answer = transport.post(url, body, headers, stream=False, on_retry=on_retry)
    assert isinstance(answer, dict)
    if on_raw is not None:
        on_raw(answer)
    return adapter.parse_response(answer)
