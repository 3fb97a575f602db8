"""HTTP transport to the model: retries with backoff, no redirects, capped bodies, SSE decoding."""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from .errors import ModelError
from .providers.rejection import context_rejection

if TYPE_CHECKING:
    import httpx

MAX_BODY_BYTES = 48 * 1024 * 1024
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
# A server asking us to wait longer than this is treated as if it asked for this long.
MAX_RETRY_AFTER = 60.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_SNIPPET = 300


class TransportError(ModelError):
    """The model endpoint could not be reached or answered with an error or an unusable body.

    ``status`` is the HTTP status (None when no response came); ``provider_message`` is the
    provider's own error text when it gave one. Messages never include request bodies or headers.
    """

    def __init__(self, message: str, *, status: int | None = None, provider_message: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.provider_message = provider_message


class _Transient(Exception):
    """A failure worth retrying; ``delay`` is the server's Retry-After when it sent one."""

    def __init__(self, reason: str, error: TransportError, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error
        self.delay = delay


@dataclass
class StreamResult:
    """What a streamed POST produced besides the events handed to ``on_event``."""

    status: int
    events: int


class Transport:
    """POSTs JSON to a model endpoint; one instance per agent run (it keeps a connection pool)."""

    def __init__(
        self,
        *,
        timeout: float = 600.0,
        connect_timeout: float = 10.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        trust_env: bool = True,
    ) -> None:
        self.timeout = timeout
        self.connect_timeout = connect_timeout
        self.max_body_bytes = max_body_bytes
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        # Proxy variables apply to remote model endpoints (a user behind a proxy needs them);
        # loopback endpoints always go direct.
        self.trust_env = trust_env
        self._clients: dict[bool, httpx.Client] = {}

    def _client(self, url: str) -> httpx.Client:
        import httpx

        direct = (urlsplit(url).hostname or "") in _LOOPBACK or not self.trust_env
        client = self._clients.get(direct)
        if client is None:
            client = httpx.Client(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                follow_redirects=False,
                trust_env=not direct,
            )
            self._clients[direct] = client
        return client

    def close(self) -> None:
        """Close the connection pools."""
        for client in self._clients.values():
            client.close()
        self._clients.clear()

    def __enter__(self) -> Transport:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def post(
        self,
        url: str,
        body: dict[str, Any],
        headers: dict[str, str],
        *,
        stream: bool,
        on_retry: Callable[[int, str], None],
        on_event: Callable[[dict[str, Any]], None] | None = None,
    ) -> dict[str, Any] | StreamResult:
        """POST ``body``; the decoded JSON answer, or for ``stream`` a StreamResult after every SSE
        event went to ``on_event``. ``on_retry(attempt, reason)`` runs before each physical retry."""
        if stream and on_event is None:
            raise ValueError("a streamed post needs on_event")
        payload = orjson.dumps(body)
        attempt = 0
        while True:
            try:
                return self._attempt(url, payload, headers, stream, on_event)
            except _Transient as transient:
                if attempt >= self.retries:
                    error = transient.error
                    raise TransportError(
                        f"{error} (gave up after {attempt + 1} attempts)",
                        status=error.status,
                        provider_message=error.provider_message,
                    ) from None
                attempt += 1
                on_retry(attempt, transient.reason)
                self.sleep(self._delay(attempt, transient.delay))

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(max(retry_after, 0.0), MAX_RETRY_AFTER)
        base = self.backoff * (2 ** (attempt - 1))
        return base + random.uniform(0, base / 2)

    def _attempt(
        self,
        url: str,
        payload: bytes,
        headers: dict[str, str],
        stream: bool,
        on_event: Callable[[dict[str, Any]], None] | None,
    ) -> dict[str, Any] | StreamResult:
        import httpx

        delivered = 0
        try:
            with self._client(url).stream("POST", url, content=payload, headers=headers) as response:
                status = response.status_code
                if 300 <= status < 400:
                    location = response.headers.get("location", "<no location>")
                    raise TransportError(
                        f"model endpoint answered {status} redirect to {location}; redirects are not followed",
                        status=status,
                    )
                if status >= 400:
                    raw = self._read(response)
                    raise self._status_error(status, raw, response.headers)
                if not stream:
                    return _json_body(self._read(response), status)
                assert on_event is not None
                if response.headers.get("content-type", "").startswith("application/json"):
                    raw = self._read(response)
                    rejection = context_rejection(None, raw)
                    if rejection is not None:
                        raise rejection
                    detail = _provider_message(raw) or _snippet(raw)
                    raise TransportError(
                        f"model endpoint answered JSON instead of an event stream (stream: true): {detail}",
                        status=status,
                    )
                for event in self._events(response):
                    delivered += 1
                    on_event(event)
                return StreamResult(status=status, events=delivered)
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "connection failed"
            error = TransportError(f"model request {kind}: {type(exc).__name__}: {exc or 'no detail'}")
            if delivered:
                # Text already went to the user; a retry would repeat it, so the stream fails here.
                raise TransportError(f"model stream broke after {delivered} events: {type(exc).__name__}") from None
            raise _Transient(kind, error) from None

    def _chunks(self, response: httpx.Response) -> Iterator[bytes]:
        """The body's (decoded) bytes, stopping with an error once they pass the cap."""
        seen = 0
        for chunk in response.iter_bytes():
            seen += len(chunk)
            if seen > self.max_body_bytes:
                raise TransportError(
                    f"model response body exceeds the {self.max_body_bytes} byte cap; stopped reading",
                    status=response.status_code,
                )
            yield chunk

    def _read(self, response: httpx.Response) -> bytes:
        return b"".join(self._chunks(response))

    def _events(self, response: httpx.Response) -> Iterator[dict[str, Any]]:
        """Decoded SSE ``data:`` payloads; ``[DONE]`` and comments are skipped."""
        buffer = bytearray()
        scanned = 0  # bytes of ``buffer`` already known to hold no newline (keeps long lines linear)
        data: list[bytes] = []
        for chunk in self._chunks(response):
            buffer.extend(chunk)
            while (end := buffer.find(b"\n", scanned)) >= 0:
                line = bytes(buffer[:end]).rstrip(b"\r")
                del buffer[: end + 1]
                scanned = 0
                if not line:
                    if data:
                        event = _event(b"\n".join(data))
                        data = []
                        if event is not None:
                            yield event
                elif line.startswith(b"data:"):
                    data.append(line[5:].removeprefix(b" "))
                # event:, id:, retry: and ":" comments carry nothing the adapters need
                # (Anthropic repeats the event name as the payload's "type").
            scanned = len(buffer)
        tail = bytes(buffer).strip()
        if tail.startswith(b"data:"):
            data.append(tail[5:].removeprefix(b" "))
        if data:
            event = _event(b"\n".join(data))
            if event is not None:
                yield event

    def _status_error(self, status: int, raw: bytes, headers: Any) -> ModelError | _Transient:
        """What an HTTP error answer means: a context rejection (never retried), a transient
        failure (retried) or a final TransportError."""
        rejection = context_rejection(status, raw)
        if rejection is not None:
            return rejection
        provider = _provider_message(raw)
        detail = provider if provider is not None else _snippet(raw)
        if status in RETRY_STATUSES:
            error = TransportError(
                f"model endpoint answered HTTP {status}: {detail}", status=status, provider_message=provider
            )
            return _Transient(f"HTTP {status}: {detail}", error, _retry_after(headers))
        return TransportError(
            f"model endpoint answered HTTP {status}: {detail}", status=status, provider_message=provider
        )


def _event(data: bytes) -> dict[str, Any] | None:
    if data.strip() == b"[DONE]":
        return None
    try:
        event = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise TransportError(f"model stream sent an event that is not JSON: {_snippet(data)}") from None
    if not isinstance(event, dict):
        raise TransportError(f"model stream sent an event that is not a JSON object: {_snippet(data)}")
    return event


def _json_body(raw: bytes, status: int) -> dict[str, Any]:
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        raise TransportError(
            f"model endpoint answered HTTP {status} with a body that is not JSON: {_snippet(raw)}", status=status
        ) from None
    if not isinstance(body, dict):
        raise TransportError(f"model endpoint answered HTTP {status} with JSON that is not an object", status=status)
    return body


def _provider_message(raw: bytes) -> str | None:
    """``error.message`` of an OpenAI- or Anthropic-shaped error body."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    if isinstance(error, dict) and isinstance(error.get("message"), str):
        return error["message"]
    if isinstance(error, str):
        return error
    if isinstance(body.get("message"), str):
        return body["message"]
    return None


def _snippet(raw: bytes) -> str:
    text = raw[:_SNIPPET].decode("utf-8", "replace").strip()
    if not text:
        return "<empty body>"
    return repr(text) + (" ..." if len(raw) > _SNIPPET else "")


def _retry_after(headers: Any) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``Retry-After`` seconds or date)."""
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return float(value) / 1000.0
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(parsed.timestamp() - time.time(), 0.0)
