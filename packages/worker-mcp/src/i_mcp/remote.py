"""Remote MCP servers over streamable HTTP, under the web worker's egress rules (SPEC §4).

The MCP SDK's streamable HTTP client (``mcp.client.streamable_http``) speaks the protocol; this
module gives it the only HTTP client it may use, built so that a server's URL cannot be turned
against the host's own network:

- **Addresses.** Before every request the URL's host is resolved here and **every** answer must be
  public (``i_protocol.addresses``, the rules i-web applies too: loopback, private, link-local, shared,
  reserved, IPv6 forms carrying such an IPv4 address, names meaning this machine). The connection
  then goes to those checked addresses and nowhere else (a network backend that never resolves the
  name again: no DNS-rebinding window); TLS still checks the certificate against the name. Only a
  server the user's own mcp.json marks ``"allow_private": true`` may be private or loopback; cloud
  metadata addresses are refused even then. Plain ``http://`` only ever reaches a non-public address.
- **Redirects.** The SDK follows a redirect only within the endpoint's origin (same scheme, host
  and port, or http to https on the same host), and each request it then sends is checked here
  again; a redirect to another origin is not followed and the request fails naming it.
- **No proxies** (``trust_env=False``, no proxy configured: ``HTTPS_PROXY``, ``ALL_PROXY`` and
  ``SSL_CERT_FILE`` are ignored), **TLS verified** against the system's CA store.
- **Bodies capped.** A JSON answer over ``MAX_MESSAGE_BYTES`` (16 MB, the stdio launcher's limit)
  and a server-sent event over it are not read: the request they answer gets a JSON-RPC error
  saying so (``TOO_LARGE``). Compressed answers are not asked for (``Accept-Encoding: identity``)
  and refused when sent anyway, so nothing inflates past the cap.

A refusal or a network failure is answered to the SDK as a JSON-RPC error of code ``REMOTE_FAILED``
for the request it concerns (one clear line, never a traceback), so the session's other requests
and the worker go on.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import ssl
import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from http import HTTPStatus
from typing import Any

import anyio
import httpcore2
import httpx2
import orjson

from i_protocol import addresses
from i_protocol.addresses import METADATA_ADDRESSES, IPAddress, is_localhost_name, normalize_host, refusal_reason

from .__about__ import __version__
from .launch import MAX_MESSAGE_BYTES, TOO_LARGE

REMOTE_FAILED = -32002
"""The JSON-RPC error code of a request this module refused or could not deliver."""
CONNECT_TIMEOUT_S = 10.0
DNS_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 660.0
"""Longer than any call may last (600 s): a call's own deadlines (``i_mcp.client``) end it first."""


class EgressFailure(Exception):
    """A request that was refused or could not be delivered (its message is one line)."""


def literal_address(host: str) -> IPAddress | None:
    """The address when ``host`` is a canonical IP literal (``i_protocol.addresses``), as an :class:`EgressFailure`."""
    try:
        return addresses.literal_address(host)
    except addresses.AddressError as exc:
        raise EgressFailure(str(exc)) from None


_TRUST_HINT = ' (only the user\'s own mcp.json can trust a server there, with "allow_private": true)'


async def checked_addresses(host: str, port: int, scheme: str, allow_private: bool) -> list[str]:
    """The addresses of ``host`` this request may connect to: every answer checked, or ``EgressFailure``."""
    host = normalize_host(host)
    if not host:
        raise EgressFailure("the URL has no host")
    if is_localhost_name(host) and not allow_private:
        raise EgressFailure(f"refused to connect to {host}: it names this machine{_TRUST_HINT}")
    literal = literal_address(host)
    answers = [literal] if literal is not None else await _lookup(host, port)
    for address in answers:
        shown = host if literal is not None else f"{host} (resolves to {address})"
        reason = refusal_reason(address)
        if reason is None:
            if scheme == "http":
                raise EgressFailure(f"refused plain http to {shown}, a public address; use https")
            continue
        if address in METADATA_ADDRESSES:
            raise EgressFailure(f"refused to connect to {shown}: {reason}; never allowed")
        if not allow_private:
            raise EgressFailure(
                f"refused to connect to {shown}: {reason}; only public addresses are allowed{_TRUST_HINT}"
            )
    return [str(address) for address in answers]


async def _lookup(host: str, port: int) -> list[IPAddress]:
    try:
        with anyio.fail_after(DNS_TIMEOUT_S):
            infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except TimeoutError:
        raise EgressFailure(f"DNS lookup of {host} timed out") from None
    except (OSError, UnicodeError) as exc:
        raise EgressFailure(f"DNS lookup of {host} failed: {getattr(exc, 'strerror', None) or exc}") from None
    answers: list[IPAddress] = []
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%")[0])
        if address not in answers:
            answers.append(address)
    if not answers:
        raise EgressFailure(f"DNS lookup of {host} returned no addresses")
    return answers


# -- the HTTP client -------------------------------------------------------------------------------

Pins = dict[tuple[str, int], list[str]]
_NETWORK_ERRORS: tuple[type[BaseException], ...] = (
    httpcore2.NetworkError,
    httpcore2.TimeoutException,
    httpcore2.ProtocolError,
    httpcore2.UnsupportedProtocol,
    ssl.SSLError,
    OSError,
)


@asynccontextmanager
async def open_remote(url: str, headers: dict[str, str], allow_private: bool) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's streamable HTTP streams for ``url``, over a client that obeys the egress rules."""
    from mcp.client.streamable_http import streamable_http_client

    client = httpx2.AsyncClient(
        transport=EgressTransport(allow_private),
        trust_env=False,
        follow_redirects=False,
        headers={"User-Agent": f"i-mcp/{__version__}", **headers, "Accept-Encoding": "identity"},
        timeout=httpx2.Timeout(CONNECT_TIMEOUT_S, read=READ_TIMEOUT_S),
    )
    async with client:
        # The SDK's own event limit sits above ours, so ours (which answers the request) speaks first.
        limit = MAX_MESSAGE_BYTES + 1024 * 1024
        async with streamable_http_client(url, http_client=client, max_sse_event_size=limit) as streams:
            yield streams


class EgressTransport(httpx2.AsyncBaseTransport):
    """Checks each request's host, connects only to the checked addresses, caps what it reads."""

    def __init__(self, allow_private: bool, limit: int = MAX_MESSAGE_BYTES) -> None:
        self._allow_private = allow_private
        self._limit = limit
        self._pins: Pins = {}
        self._pool = httpcore2.AsyncConnectionPool(
            ssl_context=ssl_context(),
            max_connections=8,
            http1=True,
            http2=False,
            network_backend=_PinnedBackend(self._pins),
        )

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        request_id = _request_id(request)
        url = request.url
        origin = f"{url.scheme}://{url.netloc.decode('ascii', 'replace')}"
        try:
            if url.scheme not in ("http", "https"):
                raise EgressFailure(f"refused {url.scheme}: only http and https")
            host = url.raw_host.decode("ascii")
            port = url.port or (443 if url.scheme == "https" else 80)
            self._pins[(normalize_host(host), port)] = await checked_addresses(
                host, port, url.scheme, self._allow_private
            )
            response = await self._pool.handle_async_request(
                httpcore2.Request(
                    method=request.method,
                    url=httpcore2.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
                    headers=request.headers.raw,
                    content=request.stream,
                    extensions=request.extensions,
                )
            )
        except EgressFailure as exc:
            return error_response(request_id, str(exc))
        except _NETWORK_ERRORS as exc:
            return error_response(request_id, f"cannot reach {origin}: {_reason(exc)}")
        return await self._bounded(response, request_id, origin)

    async def _bounded(self, response: httpcore2.Response, request_id: object, origin: str) -> httpx2.Response:
        """``response`` with its body capped: an event stream event by event, anything else whole."""
        headers = httpx2.Headers(response.headers)
        encoding = headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            await response.aclose()
            return error_response(
                request_id,
                f"{origin} answered with Content-Encoding {encoding!r}; i-mcp accepts only uncompressed answers",
            )
        stream: Any = response.stream
        content_type = headers.get("content-type", "").lower()
        if response.status >= 400 and request_id is not None and not content_type.startswith("application/json"):
            await response.aclose()  # the SDK would say only "Server returned an error response"
            return error_response(request_id, _status_message(origin, response.status))
        if content_type.startswith("text/event-stream"):
            events = _EventStream(stream, request_id, self._limit)
            return httpx2.Response(response.status, headers=headers, stream=events, extensions=response.extensions)
        length = headers.get("content-length", "")
        if length.isdigit() and int(length) > self._limit:
            await response.aclose()
            return error_response(request_id, too_large(int(length)), TOO_LARGE)
        body = bytearray()
        try:
            async for chunk in stream:
                body += chunk
                if len(body) > self._limit:
                    return error_response(request_id, too_large(None), TOO_LARGE)
        except _NETWORK_ERRORS as exc:
            return error_response(request_id, f"reading the answer of {origin} failed: {_reason(exc)}")
        finally:
            await response.aclose()
        return httpx2.Response(response.status, headers=headers, content=bytes(body), extensions=response.extensions)

    async def aclose(self) -> None:
        await self._pool.aclose()


_BLANK_LINES = (b"\r\n\r\n", b"\n\n", b"\r\r", b"\n\r")
"""What ends a server-sent event; the longest first, so that a CRLF blank line is passed on whole
(cut after its ``\n\r``, the SDK's reader would wait for the next chunk to read the last ``\n``)."""


class _EventStream(httpx2.AsyncByteStream):
    """An event stream passed on whole events at a time; an event over the limit is not read:
    the request it answers gets a ``TOO_LARGE`` error event instead, and the stream ends."""

    def __init__(self, inner: Any, request_id: object, limit: int) -> None:
        self._inner = inner
        self._request_id = request_id
        self._limit = limit

    async def __aiter__(self) -> AsyncIterator[bytes]:
        pending = bytearray()
        try:
            async for chunk in self._inner:
                start = max(0, len(pending) - 3)
                pending += chunk
                # An event ends at a blank line: two line ends in a row (\r\n\r\n, \n\n, \r\r, \n\r).
                cut = max(_end_of(pending, sep, start) for sep in _BLANK_LINES)
                if cut:
                    yield bytes(pending[:cut])
                    del pending[:cut]
                if len(pending) > self._limit:
                    print(
                        f"i-mcp: an event of over {len(pending)} bytes was over the limit and not read", file=sys.stderr
                    )
                    if self._request_id is not None:
                        yield (
                            b"event: message\ndata: "
                            + _error_body(self._request_id, too_large(None), TOO_LARGE)
                            + b"\n\n"
                        )
                    return
        except _NETWORK_ERRORS as exc:
            raise httpx2.ReadError(_reason(exc)) from None
        if pending:
            yield bytes(pending)

    async def aclose(self) -> None:
        close = getattr(self._inner, "aclose", None)
        if close is not None:
            await close()


def _end_of(data: bytearray, separator: bytes, start: int) -> int:
    """Where the last ``separator`` at or after ``start`` ends (0: none)."""
    found = data.rfind(separator, start)
    return found + len(separator) if found >= 0 else 0


class _PinnedBackend(httpcore2.AsyncNetworkBackend):
    """Connects to the checked addresses of a host, never resolving the name again."""

    def __init__(self, pins: Pins) -> None:
        self._pins = pins
        self._inner = httpcore2.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore2.AsyncNetworkStream:
        addresses = self._pins.get((normalize_host(host), port))
        if not addresses:
            raise httpcore2.ConnectError(f"{host}:{port} was not checked before connecting; refused")
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._inner.connect_tcp(address, port, timeout=timeout, socket_options=socket_options)
            except (httpcore2.ConnectError, httpcore2.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None
        raise failure

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore2.AsyncNetworkStream:
        raise httpcore2.ConnectError("unix sockets are not reachable from i-mcp")

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


_CA_FILES = (
    "/etc/ssl/cert.pem",
    "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    "/etc/pki/tls/cert.pem",
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/ssl/ca-bundle.pem",
)


def ssl_context() -> ssl.SSLContext:
    """A verifying context (hostname and chain) on the CA store compiled into OpenSSL, never the
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` of the environment."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # check_hostname and CERT_REQUIRED
    paths = ssl.get_default_verify_paths()
    cafile = paths.openssl_cafile if os.path.isfile(paths.openssl_cafile) else None
    capath = paths.openssl_capath if os.path.isdir(paths.openssl_capath) else None
    if not cafile and not capath:
        cafile = next(filter(os.path.isfile, _CA_FILES), None)
    if cafile or capath:
        context.load_verify_locations(cafile, capath)
    elif sys.platform == "win32":  # pragma: no cover - the Windows store
        context.load_default_certs()
    return context


def too_large(size: int | None) -> str:
    """The message for an answer over ``MAX_MESSAGE_BYTES`` (the launcher's wording)."""
    shown = f"{size / 2**20:.1f} MB, over" if size is not None else "over"
    return (
        f"the server's answer is {shown} i-mcp's limit of {MAX_MESSAGE_BYTES // 2**20} MB (too large; it was not read)"
    )


def error_response(request_id: object, message: str, code: int = REMOTE_FAILED) -> httpx2.Response:
    """The answer the SDK gets instead of the server's: a JSON-RPC error for the request (plain text
    for a request without an id: the SDK's event-stream GET, its session DELETE)."""
    if request_id is None:
        return httpx2.Response(502, headers={"content-type": "text/plain"}, content=message.encode())
    return httpx2.Response(
        502, headers={"content-type": "application/json"}, content=_error_body(request_id, message, code)
    )


def _error_body(request_id: object, message: str, code: int) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}})


def _request_id(request: httpx2.Request) -> object:
    """The JSON-RPC id of a POSTed request (None for a notification, a GET, a DELETE)."""
    if request.method != "POST":
        return None
    try:
        message = orjson.loads(request.content)
    except (httpx2.RequestNotRead, orjson.JSONDecodeError):
        return None
    return message.get("id") if isinstance(message, dict) else None


def _status_message(origin: str, status: int) -> str:
    """One line for an HTTP error status, with what to do about the usual ones."""
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "error"
    hint = {
        401: '; it wants credentials: give a token as "bearer_token": {"file": PATH} (OAuth is not supported)',
        403: "; the server refused these credentials",
        404: "; check the URL (the endpoint is often /mcp)",
    }.get(status, "")
    return f"{origin} answered HTTP {status} {phrase}{hint}"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted ({exc.verify_message or exc.reason})"
    if isinstance(exc, httpcore2.TimeoutException):
        return "timed out"
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0] if text else type(exc).__name__
