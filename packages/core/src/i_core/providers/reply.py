"""What every protocol adapter returns, its error type, and the shared normalisers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..errors import ProviderError

# Fields the adapter owns on every wire body: extra_body may add fields, never replace these.
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


class StreamParser(Protocol):
    """Incremental reader of one streamed answer: feed decoded SSE events, then finish."""

    def feed(self, event: dict[str, Any]) -> None: ...

    def raw(self) -> dict[str, Any]: ...

    def finish(self) -> ModelReply: ...


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


def error_message(body: dict[str, Any]) -> str | None:
    """The provider's error message in an error-shaped body (OpenAI and Anthropic), else None."""
    error = body.get("error")
    if isinstance(error, dict):
        return str(error.get("message") or error.get("type") or "unknown error")
    if isinstance(error, str):
        return error
    return None
