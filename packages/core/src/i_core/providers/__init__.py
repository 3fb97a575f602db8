"""Model protocol adapters: the internal history format to each provider's wire format and back."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import ConfigError, ModelError, ProviderError, TransportError
from ..modules import PROFILES
from .anthropic import AnthropicAdapter
from .omission import omitted, refusal_hint, refused_field
from .openai import DeepSeekAdapter, OpenAIAdapter
from .rejection import context_rejection
from .reply import INVALID_EVENT, RESERVED_FIELDS, Adapter, ModelReply, StreamParser
from .responses import ResponsesAdapter

if TYPE_CHECKING:
    from ..manifest import Manifest
    from ..transport import Transport

__all__ = [
    "RESERVED_FIELDS",
    "Adapter",
    "AnthropicAdapter",
    "DeepSeekAdapter",
    "ModelReply",
    "OpenAIAdapter",
    "ProviderError",
    "ResponsesAdapter",
    "StreamParser",
    "context_rejection",
    "exchange",
    "get_adapter",
    "require_protocol_modules",
]

_T = TypeVar("_T")
PROTOCOLS = ("openai", "deepseek", "anthropic", "responses")
# The module each protocol needs in the manifest, for the events it must handle there.
_NEEDS = {"responses": ("responses", ("before_request", "after_response"))}


def get_adapter(protocol: str) -> Adapter:
    """The adapter of a configured ``protocol``."""
    if protocol == "openai":
        return OpenAIAdapter()
    if protocol == "deepseek":
        return DeepSeekAdapter()
    if protocol == "anthropic":
        return AnthropicAdapter()
    if protocol == "responses":
        return ResponsesAdapter()
    raise ProviderError(f"unknown protocol {protocol!r}; known protocols: {', '.join(PROTOCOLS)}")


def require_protocol_modules(protocol: str, manifest: Manifest) -> None:
    """Refuse, at start, a protocol whose wire transform is a module the manifest does not run.

    ``responses`` needs the `responses` module on ``before_request`` and ``after_response`` (its
    bundled worker or a binding; a hand-written manifest names the entry ``"module": "responses"``).
    """
    need = _NEEDS.get(protocol)
    if need is None:
        return
    module, events = need
    handled = {event for hook in manifest.hooks if hook.module == module for event in events if hook.handles(event)}
    missing = [event for event in events if event not in handled]
    if missing:
        profiles = ", ".join(name for name, modules in PROFILES.items() if module in modules)
        raise ConfigError(
            f'protocol "{protocol}" needs the {module!r} module (the wire transform) on {", ".join(missing)}, '
            f"which {manifest.source} does not run: select a profile that contains it ({profiles}) "
            f'in plugins.json, e.g. {{"profile": "full"}}, or bind a replacement in bindings.json'
        )


def exchange(
    adapter: Adapter,
    transport: Transport,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    *,
    on_retry: Callable[[int, str], None],
    on_text: Callable[[str], None] | None = None,
    on_raw: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
    omit: tuple[str, ...] = (),
) -> ModelReply:
    """POST ``body`` and parse the answer; streams when ``body["stream"]`` is true, text going to ``on_text``.

    ``on_raw`` (the after_response hooks) sees the provider's body (rebuilt from the events when
    streamed) BEFORE the adapter validates it, so usage observers also see answers the adapter then
    rejects, and streams that failed after they began (an error chunk, a broken connection) with
    what they carried: OpenRouter reports the usage of a failed generation in its error chunk.
    For ``responses`` the hooks' answer is the reply: the module turned the body into a history reply.
    ``omit`` (config.json's ``omit_fields``) leaves those fields out of the body as it is sent, and
    an HTTP 400 naming a field it could leave out says so.
    """
    body = omitted(body, omit)
    if isinstance(adapter, ResponsesAdapter):
        adapter.check_wire(body, omit)
    try:
        return _exchanged(adapter, transport, url, body, headers, on_retry, on_text, on_raw)
    except TransportError as exc:
        field = refused_field(exc.provider_message or str(exc), body) if exc.status in (400, 422) else None
        if field is None:
            raise
        raise TransportError(
            f"{exc}; {refusal_hint(field)}", status=exc.status, provider_message=exc.provider_message
        ) from None


def _exchanged(
    adapter: Adapter,
    transport: Transport,
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    on_retry: Callable[[int, str], None],
    on_text: Callable[[str], None] | None,
    on_raw: Callable[[dict[str, Any]], dict[str, Any] | None] | None,
) -> ModelReply:
    if body.get("stream") is True:
        parser = adapter.stream_parser(on_text or (lambda _text: None))
        fed = 0

        def feed(event: dict[str, Any]) -> None:
            nonlocal fed
            fed += 1
            _parsed(adapter, lambda: parser.feed(event))

        try:
            result = transport.post(url, body, headers, stream=True, on_retry=on_retry, on_event=feed)
        except ModelError:
            if on_raw is not None and fed:
                on_raw(parser.raw())
            raise
        assert not isinstance(result, dict)
        answer = parser.raw()
        seen = on_raw(answer) if on_raw is not None else None
        if isinstance(adapter, ResponsesAdapter):
            return _parsed(adapter, lambda: adapter.parse_response(_converted(seen, answer)))
        return _parsed(adapter, lambda: parser.finish(ended=result.done))
    whole = transport.post(url, body, headers, stream=False, on_retry=on_retry)
    assert isinstance(whole, dict)
    seen = on_raw(whole) if on_raw is not None else None
    converted = _converted(seen, whole) if isinstance(adapter, ResponsesAdapter) else whole
    return _parsed(adapter, lambda: adapter.parse_response(converted))


def _parsed(adapter: Adapter, parse: Callable[[], _T]) -> _T:
    """``parse()``, where model data of a shape no parser check foresaw is still the clean
    invalid-event error (exit 4, the session untouched), never a crash. The parsers check every
    field's type themselves; this is the net under them, so a gap is a message, not a traceback."""
    try:
        return parse()
    except (AttributeError, TypeError, KeyError, IndexError, ValueError) as exc:
        raise ProviderError(f"{INVALID_EVENT} ({adapter.name} parser: {type(exc).__name__}: {exc})") from None


def _converted(seen: dict[str, Any] | None, answer: dict[str, Any]) -> dict[str, Any]:
    """The ``response`` the after_response hooks answered (``answer`` itself when none ran)."""
    response = seen.get("response") if isinstance(seen, dict) else None
    return response if isinstance(response, dict) else answer
