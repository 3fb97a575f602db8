"""What every protocol adapter returns, its error type, and the shared normalisers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from ..errors import ProviderError

# The longest upstream reason (OpenRouter's error.metadata.raw) an error message quotes.
UPSTREAM_REASON_CHARS = 500
# Fields of a request body the core controls; extra_body (config.json) may never set them.
RESERVED_FIELDS = frozenset(
    {
        "model",
        "messages",
        "system",
        "tools",
        "tool_choice",
        "stream",
        "stream_options",
        "max_tokens",
        "max_completion_tokens",
        "max_output_tokens",
        "input",
        "instructions",
        "functions",
        "n",
    }
)


@dataclass
class ModelReply:
    """One model answer in the internal format, plus what hooks and the budget need from it."""

    message: dict[str, Any]
    finish_reason: str
    usage: dict[str, int | None] | None
    raw: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)
    """What the adapter read beyond the wire's own fields: ``finish_inferred`` (the server never said
    why it stopped; the complete body or the stream's ``[DONE]`` did, so the reason was taken from
    the content), ``refusal`` (the answer is the model's refusal)."""


class StreamParser(Protocol):
    """Incremental reader of one streamed answer: feed decoded SSE events, then finish.

    ``ended`` tells ``finish`` that the stream reached its end marker (``data: [DONE]``): a stream
    that ended so is complete even when it never named a finish reason; one that did not was cut.
    """

    def feed(self, event: dict[str, Any]) -> None: ...

    def raw(self) -> dict[str, Any]: ...

    def finish(self, *, ended: bool = False) -> ModelReply: ...


class Adapter(Protocol):
    """Translates the internal history to one provider's wire format and its answers back."""

    name: str

    def url(self, base_url: str) -> str: ...

    def headers(self, api_key: str | None) -> dict[str, str]: ...

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
    ) -> dict[str, Any]: ...

    def parse_response(self, body: dict[str, Any]) -> ModelReply: ...

    def stream_parser(self, on_text: Callable[[str], None]) -> StreamParser: ...

    def parse_stream(self, events: Iterable[dict[str, Any]], on_text: Callable[[str], None]) -> ModelReply: ...


def count(value: Any) -> int | None:
    """A token count when ``value`` is a non-negative int (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def normalized_usage(
    input_tokens: Any, output_tokens: Any, cache_read: Any = None, cache_creation: Any = None
) -> dict[str, int | None] | None:
    """The internal usage dict, or None when a count is missing or invalid (unknown is never 0).

    Optional cache counts may be absent (None) but an invalid present value voids the whole usage.
    """
    total_in, total_out = count(input_tokens), count(output_tokens)
    if total_in is None or total_out is None:
        return None
    cached = {"cache_read_tokens": cache_read, "cache_creation_tokens": cache_creation}
    for value in cached.values():
        if value is not None and count(value) is None:
            return None
    return {"input_tokens": total_in, "output_tokens": total_out, **cached}


def included_cache(total: Any, details: Any) -> tuple[Any, Any]:
    """(cache read, cache creation) of a usage whose details count both inside ``total``.

    OpenAI's ``cached_tokens`` and, where a compatible service reports it (OpenRouter, Bedrock),
    ``cache_write_tokens``: both are part of the input, never added to it. Written + read beyond
    the total is inconsistent: both unknown (None), never 0.
    """
    if not isinstance(details, dict):
        return None, None
    read, written = details.get("cached_tokens"), details.get("cache_write_tokens")
    known = [value for value in (count(read), count(written)) if value is not None]
    if count(total) is not None and sum(known) > total:
        return None, None
    return read, written


def merge_extra_body(body: dict[str, Any], extra_body: dict[str, Any] | None) -> dict[str, Any]:
    """``body`` with ``extra_body`` merged last; refuses to override a reserved control field."""
    if not extra_body:
        return body
    if not isinstance(extra_body, dict):
        raise ProviderError(f"extra_body must be a JSON object, not {type(extra_body).__name__}")
    clashes = sorted(key for key in extra_body if key in RESERVED_FIELDS)
    if clashes:
        raise ProviderError(
            f"extra_body may not set {', '.join(clashes)}: the core controls "
            f"{', '.join(sorted(RESERVED_FIELDS))}; set model/max_tokens in config.json instead"
        )
    return {**body, **extra_body}


def tool_specs(tools: list[dict[str, Any]] | None) -> list[tuple[str, str, dict[str, Any]]]:
    """(name, description, parameters) of each tool, given flat or in the OpenAI function wrapper."""
    specs = []
    for index, tool in enumerate(tools or []):
        wrapped = tool.get("type") == "function" and isinstance(tool.get("function"), dict)
        spec: dict[str, Any] = tool["function"] if wrapped else tool
        name = spec.get("name")
        if not isinstance(name, str) or not name:
            raise ProviderError(f"tool #{index} has no name")
        parameters = spec.get("parameters") or {"type": "object", "properties": {}}
        specs.append((name, str(spec.get("description") or ""), parameters))
    return specs


def require(container: Any, key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``container[key]`` when it has type ``kind``; otherwise a ProviderError naming what is missing."""
    if not isinstance(container, dict):
        raise ProviderError(f"malformed model response: {where} is not an object")
    value = container.get(key)
    if not isinstance(value, kind):
        state = "missing" if key not in container else f"a {type(value).__name__}"
        raise ProviderError(f"malformed model response: {where}.{key} is {state}")
    return value


INVALID_EVENT = "model sent an invalid event"


def invalid_event(where: str, value: Any, expected: str) -> ProviderError:
    """The clean error for model data of an unexpected type: names the field, what it is and what it should be."""
    return ProviderError(f"{INVALID_EVENT}: {where} is {_kind(value)}, not {expected}")


def optional(container: dict[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """``container[key]`` when it has type ``kind``; None when absent or null; else ``invalid_event``."""
    value = container.get(key)
    if value is None or (isinstance(value, kind) and not isinstance(value, bool)):
        return value
    names = kind if isinstance(kind, tuple) else (kind,)
    raise invalid_event(f"{where}.{key}", value, " or ".join(_TYPE_NAMES.get(k, k.__name__) for k in names))


def wire_index(container: dict[str, Any], key: str, where: str, default: int) -> int:
    """A non-negative integer index (a block's, a tool call's); ``default`` when absent or null."""
    value = container.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid_event(f"{where}.{key}", value, "a non-negative integer")
    return value


_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", int: "an integer", float: "a number"}


def _kind(value: Any) -> str:
    names = {bool: "a boolean", **_TYPE_NAMES}
    return "null" if value is None else names.get(type(value), f"a {type(value).__name__}")


def error_message(body: dict[str, Any]) -> str | None:
    """The provider's error message in an error-shaped body (OpenAI and Anthropic), else None."""
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "unknown error") + upstream_reason(error)
    if isinstance(error, str):
        return error
    return None


def upstream_reason(error: dict[str, Any]) -> str:
    """`` (provider: reason)`` from OpenRouter's ``error.metadata.raw``, bounded; "" when absent.

    OpenRouter says only "Provider returned error" and puts the upstream's own reason (a rate limit,
    a refused parameter) in ``metadata.raw``. Nothing else of ``metadata`` is shown: it may carry
    the upstream's response headers.
    """
    metadata = error.get("metadata")
    raw = metadata.get("raw") if isinstance(metadata, dict) else None
    if raw is None or raw == "":
        return ""
    text = " ".join((raw if isinstance(raw, str) else orjson.dumps(raw).decode()).split())
    if len(text) > UPSTREAM_REASON_CHARS:
        text = text[:UPSTREAM_REASON_CHARS] + " ..."
    provider = metadata.get("provider_name") if isinstance(metadata, dict) else None
    return f" ({provider}: {text})" if isinstance(provider, str) and provider else f" ({text})"


def block_break(before: str, after: str) -> str:
    """The newlines that keep two text runs apart which another block (a tool call, thinking, search
    results, another response) separated: a paragraph break, counting the newlines they already have."""
    if not before or not after:
        return ""
    have = len(before) - len(before.rstrip("\n")) + len(after) - len(after.lstrip("\n"))
    return "\n" * max(0, 2 - have)


def joined_runs(runs: Iterable[str]) -> str:
    """Text runs (each the text between two non-text blocks) joined with ``block_break``; adjacent
    text blocks (Anthropic's citation pieces) belong to one run and are joined as they are."""
    text = ""
    for run in runs:
        text += block_break(text, run) + run
    return text


def bearer_headers(api_key: str | None) -> dict[str, str]:
    """JSON content type and, when a key is configured, a Bearer authorisation (OpenAI's wires)."""
    headers = {"content-type": "application/json", "accept": "application/json"}
    if api_key:
        headers["authorization"] = f"Bearer {api_key}"
    return headers


def chat_tools(tools: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Tool schemas as Chat Completions function tools (the history format's, and OpenAI's wire)."""
    return [
        {"type": "function", "function": {"name": name, "description": description, "parameters": params}}
        for name, description, params in tool_specs(tools)
    ]
