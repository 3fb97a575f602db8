"""The HTTP client of web_fetch: connects only to addresses that were checked, under one deadline.

Imported only on the fetch path, because httpx and httpcore are slow to import.
"""

from __future__ import annotations

import functools
import ssl
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from .address import normalize_host

# (host as it appears in the URL, port) -> the addresses checked for it; filled before each hop.
Pins = dict[tuple[str, int], list[str]]


def open_client(pins: Pins, deadline: float) -> httpx.Client:
    """An httpx client with no environment proxies whose connections go only to pinned addresses."""
    pool = httpcore.ConnectionPool(
        ssl_context=_ssl_context(),
        max_connections=4,
        http1=True,
        http2=False,
        network_backend=_PinnedBackend(pins, deadline),
    )
    remaining = max(0.1, deadline - time.monotonic())
    return httpx.Client(
        transport=_PinnedTransport(pool),
        trust_env=False,
        follow_redirects=False,
        timeout=httpx.Timeout(remaining),
    )


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """One verifying context per process: loading the CA bundle costs ~60 ms, so it is done once."""
    try:
        import certifi

        return ssl.create_default_context(cafile=certifi.where())
    except ImportError:  # pragma: no cover - httpx depends on certifi
        return ssl.create_default_context()


class DeadlineExceeded(httpcore.TimeoutException):
    """The whole fetch ran out of its time budget."""


def _clamp(deadline: float, timeout: float | None) -> float:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded("deadline reached")
    return remaining if timeout is None else min(timeout, remaining)


class _DeadlineStream(httpcore.NetworkStream):
    """Every read and write waits no longer than what is left of the overall deadline, so a
    server trickling one byte at a time cannot stretch the fetch past it."""

    def __init__(self, inner: httpcore.NetworkStream, deadline: float) -> None:
        self._inner = inner
        self._deadline = deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._inner.read(max_bytes, _clamp(self._deadline, timeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _clamp(self._deadline, timeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        # server_hostname is the URL's host name: SNI and certificate checks use the name, while
        # the TCP connection underneath goes to the checked address.
        inner = self._inner.start_tls(ssl_context, server_hostname, _clamp(self._deadline, timeout))
        return _DeadlineStream(inner, self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _PinnedBackend(httpcore.NetworkBackend):
    """Connects to the checked addresses of a host, never resolving the name again."""

    def __init__(self, pins: Pins, deadline: float) -> None:
        self._pins = pins
        self._deadline = deadline
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._pins.get((normalize_host(host), port))
        if not addresses:
            raise httpcore.ConnectError(f"{host}:{port} was not checked before connecting; refused")
        failure: Exception | None = None
        for address in addresses:
            try:
                stream = self._inner.connect_tcp(
                    address, port, timeout=_clamp(self._deadline, timeout), socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
                continue
            return _DeadlineStream(stream, self._deadline)
        assert failure is not None
        raise failure

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("unix sockets are not reachable from web_fetch")


class _PinnedTransport(httpx.BaseTransport):
    """httpx transport over an httpcore pool that uses the pinned backend."""

    def __init__(self, pool: httpcore.ConnectionPool) -> None:
        self._pool = pool

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        assert isinstance(request.stream, Iterable)
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        response = self._pool.handle_request(core_request)
        assert isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


class _ResponseStream(httpx.SyncByteStream):
    def __init__(self, inner: Iterable[bytes]) -> None:
        self._inner = inner

    def __iter__(self) -> Iterator[bytes]:
        yield from self._inner

    def close(self) -> None:
        close = getattr(self._inner, "close", None)
        if close is not None:
            close()


# Failures of the HTTP stack that are the remote side's doing, not a bug here.
TRANSPORT_ERRORS: tuple[type[Exception], ...] = (
    httpcore.NetworkError,
    httpcore.ProtocolError,
    httpcore.UnsupportedProtocol,
    httpx.HTTPError,
    httpx.InvalidURL,
    ssl.SSLError,
    OSError,
)
TIMEOUT_ERRORS: tuple[type[Exception], ...] = (httpcore.TimeoutException, httpx.TimeoutException)
