"""HTTP transport to the model: retries with backoff, no redirects, capped bodies, SSE decoding.

Every attempt has a total deadline, ``timeout`` seconds from the start of the connect to the last
byte of the body or stream: httpx's own timeouts only bound the silence between two reads, so a
server sending one byte a second could otherwise hold a request forever. A stream that has begun
(its first body byte arrived) also fails after ``idle_timeout`` seconds without a byte. The HTTP
exchange runs on a helper thread and hands its parts to the caller through a queue, so the caller
waits with a deadline whatever the server does (trickled headers, a slow DNS answer, a silent
stream); everything the caller sees (events, hooks, text) still happens on the caller's thread.
"""

from __future__ import annotations

import email.utils
import math
import queue
import random
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from .cancel import Cancelled
from .errors import ModelError, TransportError
from .providers.rejection import context_rejection
from .providers.reply import upstream_reason

if TYPE_CHECKING:
    import httpx

MAX_BODY_BYTES = 48 * 1024 * 1024
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 529})
# A server asking us to wait longer than this is treated as if it asked for this long.
MAX_RETRY_AFTER = 60.0
# A wait longer than this (the server's Retry-After, or the backoff) is said on stderr first.
SAID_WAIT = 5.0
# Longest silence a stream that has begun may keep (never more than the request's timeout). Generous
# on purpose: reasoning models and servers that hold back a long tool call send nothing for minutes.
STREAM_IDLE_LIMIT = 300.0
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_SNIPPET = 300


_imported: threading.Thread | None = None
_imported_lock = threading.Lock()


def warm_up() -> None:
    """Import httpx and httpcore on a helper thread, once per process, while the caller goes on.

    They cost ~60 ms of a one-shot run's CPU (httpcore is imported by the first ``httpx.Client``);
    a session spends much of its start waiting for its first workers, and this is done meanwhile.
    """
    global _imported
    with _imported_lock:
        if _imported is None:
            _imported = threading.Thread(target=_import_httpx, name="i-http-import", daemon=True)
            _imported.start()


def _import_httpx() -> None:
    # httpx imports its command line client (click, rich, pygments: ~10 ms) whenever those happen to
    # be installed; the core never runs it, and a None entry makes that import fail as if absent.
    sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    import httpcore  # noqa: F401
    import httpx  # noqa: F401


def _wait_for_imports() -> None:
    thread = _imported
    if thread is not None and thread is not threading.current_thread():
        thread.join()


def _tls_for(plain: bool, direct: bool) -> Any:
    """httpx's ``verify`` for a client: the default CA bundle, except for plain HTTP to a loopback
    host, which never makes a TLS connection (no redirects are followed, no proxy is used): it gets
    a context that trusts no certificate at all (fail-closed, and no bundle to load: ~17 ms)."""
    if direct and plain:
        import ssl

        return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies hostnames and certificates; trusts none
    return True


class _Expired(Exception):
    """The attempt's total deadline or a begun stream's idle limit passed; the message says which."""


class _Clock:
    """The deadlines of one attempt: ``total`` seconds from its start, and (for a stream) ``idle``
    seconds of silence once the first body byte arrived."""

    def __init__(self, total: float, idle: float | None) -> None:
        self.total = total
        self.idle = idle
        self.deadline = time.monotonic() + total
        self.last: float | None = None  # when the last body byte arrived

    def wait(self) -> tuple[float, str]:
        """Seconds the caller may still wait for the next part, and the message if that runs out."""
        now = time.monotonic()
        left = self.deadline - now
        expired = f"the model request did not finish within {self.total:g} s (timeout in config.json)"
        if self.idle is not None and self.last is not None and self.last + self.idle - now < left:
            return self.last + self.idle - now, (
                f"the model stream sent nothing for {self.idle:g} s after it began (a begun stream may be silent "
                f"for at most min(timeout, {STREAM_IDLE_LIMIT:g}) s)"
            )
        return left, expired

    def arrived(self) -> None:
        self.last = time.monotonic()


def endpoint(url: str) -> str:
    """``scheme://host:port/path`` of a URL, for messages: never its userinfo or query (a key can sit there)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid URL>"
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"  # IPv6
    port = port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{parts.scheme}://{host}{f':{port}' if port else ''}{parts.path}"


class _Exchange:
    """One HTTP POST run on a daemon thread; the caller takes its parts from a queue with a deadline.

    The thread opens the request, hands over the response (status and headers) and then each body
    chunk; it stops after the cap, at the end of the body, or at the next chunk once the caller
    abandoned it. An abandoned thread ends at its next read (httpx bounds each read by the timeout)
    and never blocks the process from exiting.
    """

    def __init__(self, client: httpx.Client, url: str, payload: bytes, headers: dict[str, str], cap: int) -> None:
        self._parts: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()
        self._abandoned = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(client, url, payload, headers, cap), name="i-model-request", daemon=True
        )
        self._thread.start()

    def _run(self, client: httpx.Client, url: str, payload: bytes, headers: dict[str, str], cap: int) -> None:
        from .decoding import ACCEPT_ENCODING, decoded

        if not any(name.lower() == "accept-encoding" for name in headers):
            headers = {**headers, "accept-encoding": ACCEPT_ENCODING}  # only codings undone in bounded steps
        try:
            with client.stream("POST", url, content=payload, headers=headers) as response:
                self._parts.put(("response", response))
                seen = 0
                # Raw bytes, decoded a bounded step per layer: httpx would inflate each chunk whole.
                for chunk in decoded(response.iter_raw(), response.headers.get("content-encoding")):
                    if self._abandoned.is_set():
                        return
                    self._parts.put(("chunk", chunk))
                    seen += len(chunk)
                    if seen > cap:
                        return  # the caller stops at the cap; nothing beyond it is read
                self._parts.put(("end", None))
        except BaseException as exc:  # handed to the caller, who raises it on its own thread
            self._parts.put(("error", exc))

    def _next(self, clock: _Clock) -> tuple[str, Any]:
        left, message = clock.wait()
        try:
            kind, value = self._parts.get(timeout=max(left, 0.0))
        except queue.Empty:
            raise _Expired(message) from None
        if kind == "error":
            raise value
        return kind, value

    def response(self, clock: _Clock) -> httpx.Response:
        """The response once its status and headers arrived."""
        kind, value = self._next(clock)
        assert kind == "response"
        return value  # type: ignore[no-any-return]

    def chunks(self, clock: _Clock) -> Iterator[bytes]:
        """The body's chunks as they arrive, each within the deadlines."""
        while True:
            kind, value = self._next(clock)
            if kind == "end":
                return
            if value:
                clock.arrived()
                yield value

    def abandon(self) -> None:
        """The caller is done (finished, failed or timed out): the thread stops at its next chunk."""
        self._abandoned.set()

    def cancel(self) -> None:
        """Wake the caller at once with ``Cancelled`` (the connection is shut down by the transport)."""
        self._abandoned.set()
        self._parts.put(("error", Cancelled("the request was cancelled")))


class _Sockets:
    """A network backend that keeps the streams it opens, so that ``Transport.cancel`` can shut
    them down from another thread: closing a socket another thread reads does not wake that read,
    and a single-slot server goes on generating for a client that left; a shutdown does both."""

    def __init__(self, inner: Any, cancelled: threading.Event) -> None:
        self.inner = inner
        self.cancelled = cancelled
        self.streams: list[Any] = []
        self.lock = threading.Lock()

    def connect_tcp(self, *args: Any, **kwargs: Any) -> Any:
        stream = self.inner.connect_tcp(*args, **kwargs)
        with self.lock:
            self.streams = [*self.streams[-7:], stream]
        if self.cancelled.is_set():  # cancelled while connecting: nothing is sent
            self.shutdown()
        return stream

    def connect_unix_socket(self, *args: Any, **kwargs: Any) -> Any:
        return self.inner.connect_unix_socket(*args, **kwargs)

    def sleep(self, seconds: float) -> None:
        self.inner.sleep(seconds)

    def shutdown(self) -> None:
        """Shut down every stream opened so far (both directions): reads return, the server sees EOF."""
        with self.lock:
            streams, self.streams = self.streams, []
        for stream in streams:
            sock = stream.get_extra_info("socket")
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except (OSError, AttributeError):
                pass  # closed already


class _Transient(Exception):
    """A failure worth retrying; ``delay`` is the server's Retry-After when it sent one."""

    def __init__(self, reason: str, error: TransportError, delay: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error
        self.delay = delay


@dataclass
class StreamResult:
    """What a streamed POST produced besides the events handed to ``on_event``; ``done``: the
    stream reached ``data: [DONE]``, so it ended as the server meant it to (it was not cut)."""

    status: int
    events: int
    done: bool = False


class Transport:
    """POSTs JSON to a model endpoint; one instance per agent run (it keeps a connection pool)."""

    def __init__(
        self,
        *,
        timeout: float = 600.0,
        idle_timeout: float | None = None,
        connect_timeout: float = 10.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        retries: int = 3,
        backoff: float = 0.5,
        sleep: Callable[[float], None] = time.sleep,
        trust_env: bool = True,
        clock: Callable[[], float] = time.time,
        notice: Callable[[str], None] | None = None,
        cancellable: bool = False,
    ) -> None:
        self.timeout = timeout
        # A begun stream silent for this long has failed (default: the timeout, at most 300 s).
        self.idle_timeout = min(timeout, STREAM_IDLE_LIMIT) if idle_timeout is None else min(idle_timeout, timeout)
        self.connect_timeout = min(connect_timeout, timeout)
        self.max_body_bytes = max_body_bytes
        self.retries = retries
        self.backoff = backoff
        self.sleep = sleep
        self.clock = clock  # wall-clock seconds, for a Retry-After given as an HTTP date
        self.notice = notice or _say_on_stderr
        # Proxy variables apply to remote model endpoints (a user behind a proxy needs them);
        # loopback endpoints always go direct.
        self.trust_env = trust_env
        self._clients: dict[tuple[bool, bool], httpx.Client] = {}
        self._preparing: threading.Thread | None = None
        self.cancellable = cancellable
        """Keep each connection's socket, so that ``cancel`` can shut it down (``_Sockets``)."""
        self._cancelled = threading.Event()
        self._live: set[_Exchange] = set()
        self._sockets: list[_Sockets] = []

    def prepare(self, url: str) -> None:
        """Build the client for ``url`` in the background: importing httpx and its TLS context take
        ~60 ms, which a session spends waiting for its first workers anyway."""
        if self._preparing is None and not self._clients:
            self._preparing = threading.Thread(target=self._client, args=(url,), name="i-http-setup", daemon=True)
            self._preparing.start()

    def _client(self, url: str) -> httpx.Client:
        preparing = self._preparing
        if preparing is not None and preparing is not threading.current_thread():
            preparing.join()
            self._preparing = None
        _wait_for_imports()
        import httpx

        parts = urlsplit(url)
        direct = (parts.hostname or "") in _LOOPBACK or not self.trust_env
        plain = parts.scheme == "http"
        key = (direct, plain)
        client = self._clients.get(key)
        if client is None:
            client = httpx.Client(
                timeout=httpx.Timeout(self.timeout, connect=self.connect_timeout),
                follow_redirects=False,
                trust_env=not direct,
                verify=_tls_for(plain, direct),
            )
            if self.cancellable:
                self._watch_sockets(client)
            self._clients[key] = client
        return client

    def _watch_sockets(self, client: httpx.Client) -> None:
        """Put a ``_Sockets`` backend under the client's connection pools (httpcore's
        ``_network_backend``; a pool without one is left as it is and only its caller is woken)."""
        for transport in (getattr(client, "_transport", None), *getattr(client, "_mounts", {}).values()):
            pool = getattr(transport, "_pool", None)
            inner = getattr(pool, "_network_backend", None)
            if inner is not None:
                watched = _Sockets(inner, self._cancelled)
                pool._network_backend = watched  # type: ignore[union-attr]
                self._sockets.append(watched)

    def cancel(self) -> None:
        """From another thread: a request in flight raises ``Cancelled`` at once and its connection
        is shut down; every later request raises it before it starts. Never retried."""
        self._cancelled.set()
        for exchange in list(self._live):
            exchange.cancel()
        for sockets in self._sockets:
            sockets.shutdown()

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
        from i_protocol.jsonsafe import dumps_printable

        # Undecodable text (a lone surrogate from a Latin-1 file name) goes to the model as \xNN:
        # lossy on purpose, while the session and the workers keep the real bytes.
        payload = dumps_printable(body)
        attempt = 0
        while True:
            if self._cancelled.is_set():
                raise Cancelled("the request was cancelled")
            try:
                return self._attempt(url, payload, headers, stream, on_event)
            except _Transient as transient:
                if self._cancelled.is_set():
                    raise Cancelled("the request was cancelled") from None
                if attempt >= self.retries:
                    error = transient.error
                    raise TransportError(
                        f"{error} (gave up after {attempt + 1} attempts)",
                        status=error.status,
                        provider_message=error.provider_message,
                    ) from None
                attempt += 1
                on_retry(attempt, transient.reason)
                delay = self._delay(attempt, transient.delay)
                if delay > SAID_WAIT:
                    asked = " (the server's Retry-After)" if transient.delay is not None else ""
                    self.notice(f"{transient.reason}: waiting {delay:.0f} s{asked} before retry {attempt}")
                self.sleep(delay)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """The server's wait when it named a usable one (capped at MAX_RETRY_AFTER), else backoff."""
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER)
        base = self.backoff * (2 ** (attempt - 1))
        return float(base + random.uniform(0, base / 2))

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
        clock = _Clock(self.timeout, self.idle_timeout if stream else None)
        exchange = _Exchange(self._client(url), url, payload, headers, self.max_body_bytes)
        self._live.add(exchange)
        if self._cancelled.is_set():  # cancelled while the exchange started
            exchange.cancel()
        try:
            response = exchange.response(clock)
            status = response.status_code
            if 300 <= status < 400:
                location = response.headers.get("location", "<no location>")
                raise TransportError(
                    f"model endpoint answered {status} redirect to {location}; redirects are not followed",
                    status=status,
                )
            if status >= 400:
                raw = self._read(exchange, clock, status)
                raise self._status_error(status, raw, response.headers)
            if not stream:
                return _json_body(self._read(exchange, clock, status), status)
            assert on_event is not None
            if response.headers.get("content-type", "").startswith("application/json"):
                raw = self._read(exchange, clock, status)
                rejection = context_rejection(None, raw)
                if rejection is not None:
                    raise rejection
                detail = _provider_message(raw) or _snippet(raw)
                raise TransportError(
                    f"model endpoint answered JSON instead of an event stream (stream: true): {detail}",
                    status=status,
                )
            done = False
            for event in self._events(exchange, clock, status):
                if event is None:
                    done = True
                    continue
                delivered += 1
                on_event(event)
            return StreamResult(status=status, events=delivered, done=done)
        except _Expired as expired:
            if delivered:
                # Text already went to the user; a retry would repeat it, so the stream fails here.
                raise TransportError(f"{expired}; the stream broke after {delivered} events") from None
            raise _Transient("timed out", TransportError(str(expired))) from None
        except (httpx.TimeoutException, httpx.TransportError) as exc:
            kind = "timed out" if isinstance(exc, httpx.TimeoutException) else "connection failed"
            error = TransportError(
                f"model request to {endpoint(url)} {kind}: {type(exc).__name__}: {exc or 'no detail'}"
            )
            if delivered:
                # Text already went to the user; a retry would repeat it, so the stream fails here.
                raise TransportError(f"model stream broke after {delivered} events: {type(exc).__name__}") from None
            raise _Transient(kind, error) from None
        finally:
            exchange.abandon()
            self._live.discard(exchange)

    def _chunks(self, exchange: _Exchange, clock: _Clock, status: int) -> Iterator[bytes]:
        """The body's (decoded) bytes, stopping with an error once they pass the cap."""
        seen = 0
        for chunk in exchange.chunks(clock):
            seen += len(chunk)
            if seen > self.max_body_bytes:
                raise TransportError(
                    f"model response body exceeds the {self.max_body_bytes} byte cap; stopped reading",
                    status=status,
                )
            yield chunk

    def _read(self, exchange: _Exchange, clock: _Clock, status: int) -> bytes:
        return b"".join(self._chunks(exchange, clock, status))

    def _events(self, exchange: _Exchange, clock: _Clock, status: int) -> Iterator[dict[str, Any] | None]:
        """Decoded SSE ``data:`` payloads, None for ``[DONE]``; comments are skipped."""
        buffer = bytearray()
        scanned = 0  # bytes of ``buffer`` already known to hold no newline (keeps long lines linear)
        data: list[bytes] = []
        for chunk in self._chunks(exchange, clock, status):
            buffer.extend(chunk)
            while (end := buffer.find(b"\n", scanned)) >= 0:
                line = bytes(buffer[:end]).rstrip(b"\r")
                del buffer[: end + 1]
                scanned = 0
                if not line:
                    if data:
                        yield _event(b"\n".join(data))
                        data = []
                elif line.startswith(b"data:"):
                    data.append(line[5:].removeprefix(b" "))
                # event:, id:, retry: and ":" comments carry nothing the adapters need
                # (Anthropic repeats the event name as the payload's "type").
            scanned = len(buffer)
        tail = bytes(buffer).strip()
        if tail.startswith(b"data:"):
            data.append(tail[5:].removeprefix(b" "))
        if data:
            yield _event(b"\n".join(data))

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
            return _Transient(f"HTTP {status}: {detail}", error, _retry_after(headers, self.clock()))
        return TransportError(
            f"model endpoint answered HTTP {status}: {detail}", status=status, provider_message=provider
        )


def _event(data: bytes) -> dict[str, Any] | None:
    """One event's JSON object, or None for the end marker ``[DONE]``."""
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
    """``error.message`` of an OpenAI- or Anthropic-shaped error body, with OpenRouter's upstream reason."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(body, dict):
        return None
    error = body.get("error")
    message = error.get("message") if isinstance(error, dict) else error
    if isinstance(message, str):
        return message + upstream_reason(error) if isinstance(error, dict) else message
    message = body.get("message")
    return message if isinstance(message, str) else None


def _snippet(raw: bytes) -> str:
    text = raw[:_SNIPPET].decode("utf-8", "replace").strip()
    if not text:
        return "<empty body>"
    return repr(text) + (" ..." if len(raw) > _SNIPPET else "")


def _retry_after(headers: Any, now: float) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, ``Retry-After`` seconds or date);
    None (normal backoff) for a value that is not a finite, non-negative number or a date."""
    value = headers.get("retry-after-ms")
    if value is not None:
        seconds = _seconds(value)
        if seconds is not None:
            return seconds / 1000.0
    value = headers.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return max(parsed.timestamp() - now, 0.0)


def _seconds(value: str) -> float | None:
    """A finite, non-negative number of ``value``; None for anything else (NaN, inf, -1, text)."""
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _say_on_stderr(line: str) -> None:
    sys.stderr.write(f"i: {line}\n")
    sys.stderr.flush()
