"""web_fetch against loopback servers: limits, redirects, address checks and every fault in the issue."""

from __future__ import annotations

import gzip
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from loopback import Server, send

from i_web.address import AddressPolicy
from i_web.errors import WebError
from i_web.fetch import FetchLimits, fetch, parse_fetch_arguments
from i_web.schemas import MAX_OUTPUT_CHARS

LOOPBACK = AddressPolicy.from_entries(["127.0.0.1/32"])
UA = "i-web-test"
Handler = http.server.BaseHTTPRequestHandler


def page(body: str, content_type: str = "text/html; charset=utf-8"):  # type: ignore[no-untyped-def]
    return lambda h: send(h, 200, body.encode(), content_type)


def redirect(location: str, status: int = 302):  # type: ignore[no-untyped-def]
    return lambda h: send(h, status, b"", None, {"Location": location})


def content_of(output: str) -> str:
    """The text between the untrusted-content markers."""
    lines = output.split("\n")
    start = next(i for i, line in enumerate(lines) if line.startswith("<<<untrusted-content "))
    return "\n".join(lines[start + 1 : -1])


def test_html_page_is_framed_as_untrusted_text(server: Server) -> None:
    server.routes["/"] = page("<title>Hi</title><h1>Head</h1><p>Body text</p><script>x()</script>")
    out = fetch(server.url("/"), MAX_OUTPUT_CHARS, LOOPBACK, UA)
    first = out.split("\n")[0]
    assert first.startswith(f"[web_fetch] {server.url('/')} — HTTP 200, text/html")
    assert "untrusted data" in out and "title: Hi" in out
    assert content_of(out) == "# Head\n\nBody text"
    assert out.split("\n")[-1].startswith("<<<end untrusted-content ")
    assert server.requests[0][2]["User-Agent"] == UA


def test_json_and_plain_text_pass_through(server: Server) -> None:
    doc = json.dumps({"a": [1, 2], "<b>": "x"}, indent=1)
    server.routes["/j"] = page(doc, "application/json")
    server.routes["/t"] = page("  <b>not html</b>\n  spaced", "text/plain")
    assert content_of(fetch(server.url("/j"), 50000, LOOPBACK, UA)) == doc
    assert content_of(fetch(server.url("/t"), 50000, LOOPBACK, UA)) == "  <b>not html</b>\n  spaced"


def test_binary_content_is_not_shown(server: Server) -> None:
    server.routes["/img"] = lambda h: send(h, 200, b"\x89PNG\r\n\x1a\n" + b"\0" * 100, "image/png")
    out = fetch(server.url("/img"), 50000, LOOPBACK, UA)
    assert "binary content (image/png) is not shown" in out and "PNG" not in content_of(out)


def test_error_status_pages_are_returned_with_their_status(server: Server) -> None:
    server.routes["/gone"] = lambda h: send(h, 410, b"<p>gone away</p>")
    out = fetch(server.url("/gone"), 50000, LOOPBACK, UA)
    assert "HTTP 410" in out and content_of(out) == "gone away"


def test_loopback_is_refused_by_default(server: Server) -> None:
    server.routes["/"] = page("secret")
    for url in (
        server.url("/"),
        f"http://localhost:{server.port}/",
        f"http://[::ffff:127.0.0.1]:{server.port}/",
        f"http://2130706433:{server.port}/",
        f"http://0177.0.0.1:{server.port}/",
        f"http://127.1:{server.port}/",
    ):
        with pytest.raises(WebError, match=r"refused|non-canonical|not a valid URL"):
            fetch(url, 50000, AddressPolicy(), UA)
    assert server.requests == []


def test_metadata_address_is_refused_even_with_broad_allow_list() -> None:
    broad = AddressPolicy.from_entries(["169.254.0.0/16", "0.0.0.0/0"])
    with pytest.raises(WebError, match="metadata"):
        fetch("http://169.254.169.254/latest/meta-data/", 50000, broad, UA)
    with pytest.raises(WebError, match="metadata"):
        fetch("http://[fd00:ec2::254]/latest/meta-data/", 50000, AddressPolicy.from_entries(["fd00::/8"]), UA)


@pytest.mark.parametrize(
    "url", ["http://user:pass@example.com/", "https://token@example.com/x", "http://:p@127.0.0.1/"]
)
def test_urls_with_credentials_are_refused(url: str) -> None:
    with pytest.raises(WebError, match="credentials"):
        fetch(url, 50000, LOOPBACK, UA)


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/x",
        "gopher://127.0.0.1:70/",
        "javascript:alert(1)",
        "data:text/html,hi",
        "example.com/no-scheme",
    ],
)
def test_non_http_schemes_are_refused(url: str) -> None:
    with pytest.raises(WebError, match="scheme"):
        fetch(url, 50000, LOOPBACK, UA)


def test_redirects_are_followed_within_five_requests(server: Server) -> None:
    server.routes["/1"] = redirect("/2", 301)
    server.routes["/2"] = redirect(server.url("/3"), 307)
    server.routes["/3"] = redirect("4", 303)
    server.routes["/4"] = redirect("/5", 308)
    server.routes["/5"] = page("<p>arrived</p>")
    out = fetch(server.url("/1"), 50000, LOOPBACK, UA)
    assert content_of(out) == "arrived"
    assert f"redirected from {server.url('/1')} (5 HTTP requests)" in out
    assert out.startswith(f"[web_fetch] {server.url('/5')}")


def test_more_than_five_requests_is_an_error(server: Server) -> None:
    for n in range(1, 8):
        server.routes[f"/{n}"] = redirect(f"/{n + 1}")
    with pytest.raises(WebError, match="too many redirects: stopped after 5 HTTP requests"):
        fetch(server.url("/1"), 50000, LOOPBACK, UA)
    assert [r[1] for r in server.requests] == ["/1", "/2", "/3", "/4", "/5"]


def test_redirect_loop_is_detected(server: Server) -> None:
    server.routes["/a"] = redirect("/b")
    server.routes["/b"] = redirect("/a")
    with pytest.raises(WebError, match="redirect loop"):
        fetch(server.url("/a"), 50000, LOOPBACK, UA)
    assert len(server.requests) == 2
    server.routes["/self"] = redirect("/self")
    with pytest.raises(WebError, match="redirect loop"):
        fetch(server.url("/self"), 50000, LOOPBACK, UA)


def test_redirect_to_a_private_address_is_checked_before_connecting(server: Server, other_server: Server) -> None:
    other_server.routes["/secret"] = page("<p>internal secret</p>")
    server.routes["/go"] = redirect(other_server.url("/secret"))
    with pytest.raises(WebError, match=r"refused to connect to 127\.0\.0\.2: a loopback address"):
        fetch(server.url("/go"), 50000, LOOPBACK, UA)
    assert other_server.requests == []
    # The same redirect succeeds once the target network is trusted: the check, not the network, stopped it.
    widened = AddressPolicy.from_entries(["127.0.0.0/8"])
    assert content_of(fetch(server.url("/go"), 50000, widened, UA)) == "internal secret"


def test_redirect_to_bad_scheme_or_credentials_is_refused(server: Server) -> None:
    server.routes["/file"] = redirect("file:///etc/passwd")
    server.routes["/cred"] = redirect(f"http://u:p@127.0.0.1:{server.port}/x")
    server.routes["/meta"] = redirect("http://169.254.169.254/latest/")
    with pytest.raises(WebError, match=r"redirect target .*scheme 'file'"):
        fetch(server.url("/file"), 50000, LOOPBACK, UA)
    with pytest.raises(WebError, match=r"redirect target .*credentials"):
        fetch(server.url("/cred"), 50000, LOOPBACK, UA)
    with pytest.raises(WebError, match="metadata"):
        fetch(server.url("/meta"), 50000, LOOPBACK, UA)


def _stream_forever(total: int, sent: list[int]):  # type: ignore[no-untyped-def]
    def route(h: Handler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", str(total))
        h.end_headers()
        block = b"0123456789abcdef" * 4096
        try:
            while sent[0] < total:
                h.wfile.write(block)
                sent[0] += len(block)
        except OSError:
            pass

    return route


def test_fifty_megabyte_body_stops_at_one_megabyte(server: Server) -> None:
    sent = [0]
    total = 50 * 1024 * 1024
    server.routes["/big"] = _stream_forever(total, sent)
    out = fetch(server.url("/big"), 50000, LOOPBACK, UA)
    assert "body truncated: reading stopped at the 1048576-byte limit" in out
    assert len(out) <= MAX_OUTPUT_CHARS
    assert "[truncated:" in out
    assert sent[0] < total  # the client hung up instead of draining 50 MB


def test_gzip_bomb_is_capped_after_decompression(server: Server) -> None:
    bomb = gzip.compress(b"A" * (200 * 1024 * 1024), compresslevel=9)
    server.routes["/bomb"] = lambda h: send(h, 200, bomb, "text/plain", {"Content-Encoding": "gzip"})
    out = fetch(server.url("/bomb"), 100, LOOPBACK, UA)
    assert "body truncated" in out
    assert content_of(out).startswith("A" * 100 + "\n[truncated: 1048476 more characters")
    assert server.requests[0][2]["Accept-Encoding"] == "gzip, deflate"


def test_unsupported_encoding_is_a_clear_error(server: Server) -> None:
    server.routes["/br"] = lambda h: send(h, 200, b"\x1b\x00", "text/plain", {"Content-Encoding": "br"})
    with pytest.raises(WebError, match="unsupported Content-Encoding 'br'"):
        fetch(server.url("/br"), 50000, LOOPBACK, UA)


def test_invalid_utf8_is_replaced(server: Server) -> None:
    server.routes["/bad"] = lambda h: send(h, 200, b"<p>caf\xc3\xa9 \xff\xfe end</p>", "text/html; charset=utf-8")
    out = fetch(server.url("/bad"), 50000, LOOPBACK, UA)
    assert content_of(out) == "café \ufffd\ufffd end"
    assert "invalid utf-8 bytes were replaced" in out


def test_meta_charset_is_honoured(server: Server) -> None:
    body = '<meta charset="iso-8859-1"><p>naïve</p>'.encode("latin-1")
    server.routes["/l1"] = lambda h: send(h, 200, body, "text/html")
    assert content_of(fetch(server.url("/l1"), 50000, LOOPBACK, UA)) == "naïve"


def test_max_chars_truncates_with_a_marker(server: Server) -> None:
    server.routes["/long"] = page("x" * 5000, "text/plain")
    out = fetch(server.url("/long"), 1000, LOOPBACK, UA)
    assert content_of(out) == "x" * 1000 + "\n[truncated: 4000 more characters not shown]"
    server.routes["/huge"] = page("y" * 200_000, "text/plain")
    out = fetch(server.url("/huge"), MAX_OUTPUT_CHARS, LOOPBACK, UA)
    assert len(out) <= MAX_OUTPUT_CHARS and "[truncated:" in out


def _trickle(interval: float, count: int, in_headers: bool = False):  # type: ignore[no-untyped-def]
    def route(h: Handler) -> None:
        try:
            if in_headers:
                h.wfile.write(b"HTTP/1.1 200 OK\r\n")
                for _ in range(count):
                    h.wfile.write(b"X-Slow: y\r\n")
                    h.wfile.flush()
                    time.sleep(interval)
                return
            h.send_response(200)
            h.send_header("Content-Type", "text/plain")
            h.send_header("Content-Length", str(count))
            h.end_headers()
            h.wfile.flush()
            for _ in range(count):
                h.wfile.write(b"z")
                h.wfile.flush()
                time.sleep(interval)
        except OSError:
            pass

    return route


@pytest.mark.parametrize("in_headers", [False, True])
def test_trickling_server_cannot_outlast_the_overall_deadline(server: Server, in_headers: bool) -> None:
    # Each byte arrives well within any per-read timeout; only an overall deadline stops this
    # (without one the fetch would succeed after ~6 s of trickling).
    server.routes["/slow"] = _trickle(0.05, 120, in_headers)
    with pytest.raises(WebError, match="timed out"):
        fetch(server.url("/slow"), 50000, LOOPBACK, UA, FetchLimits(timeout_s=1.0))


@pytest.mark.parametrize("name", ["pinned.test", "PINNED.test."])
def test_connection_goes_to_the_checked_address_with_the_original_host(
    server: Server, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    lookups: list[str] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: str, *args: object, **kwargs: object) -> object:
        lookups.append(host)
        if host == "pinned.test":
            if lookups.count("pinned.test") > 1:  # a second resolution would be a rebinding window
                return real("10.9.9.9", *args, **kwargs)  # type: ignore[arg-type]
            return real("127.0.0.1", *args, **kwargs)  # type: ignore[arg-type]
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    server.routes["/p"] = page("<p>pinned ok</p>")
    policy = AddressPolicy.from_entries(["pinned.test"])
    out = fetch(f"http://{name}:{server.port}/p", 50000, policy, UA)
    assert content_of(out) == "pinned ok"
    assert lookups.count("pinned.test") == 1
    assert server.requests[0][2]["Host"] == f"{name.lower()}:{server.port}"


def test_environment_proxies_are_ignored(server: Server, other_server: Server, monkeypatch: pytest.MonkeyPatch) -> None:
    other_server.routes["/"] = page("proxied")
    for name in ("HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, other_server.url("/"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    server.routes["/direct"] = page("<p>direct</p>")
    assert content_of(fetch(server.url("/direct"), 50000, LOOPBACK, UA)) == "direct"
    assert other_server.requests == []


def test_connection_refused_is_a_clear_error() -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    with pytest.raises(WebError, match=f"fetching http://127.0.0.1:{port}/ failed: ConnectError"):
        fetch(f"http://127.0.0.1:{port}/", 50000, LOOPBACK, UA)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "'url' must be"),
        ({"url": ""}, "'url' must be"),
        ({"url": 5}, "'url' must be"),
        ({"url": "http://x", "max_chars": 0}, "max_chars"),
        ({"url": "http://x", "max_chars": 50001}, "max_chars"),
        ({"url": "http://x", "max_chars": True}, "max_chars"),
        ({"url": "http://x", "extra": 1}, "unknown argument"),
    ],
)
def test_argument_validation(arguments: dict[str, object], message: str) -> None:
    with pytest.raises(WebError, match=message):
        parse_fetch_arguments(arguments)


def test_tls_uses_the_original_name_for_sni_and_verifies_the_certificate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make a throwaway certificate")
    key, cert = tmp_path / "k.pem", tmp_path / "c.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=tls.test",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    seen: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: seen.append(name)  # type: ignore[assignment,misc,return-value]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def accept() -> None:
        conn, _ = listener.accept()
        try:
            context.wrap_socket(conn, server_side=True).close()
        except (ssl.SSLError, OSError):
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    real = socket.getaddrinfo
    monkeypatch.setattr(
        socket,
        "getaddrinfo",
        lambda host, *a, **k: real("127.0.0.1" if host == "tls.test" else host, *a, **k),  # type: ignore[arg-type]
    )
    with pytest.raises(WebError, match="CERTIFICATE_VERIFY_FAILED"):
        fetch(f"https://tls.test:{port}/", 50000, AddressPolicy.from_entries(["tls.test"]), UA)
    thread.join(5)
    listener.close()
    assert seen == ["tls.test"]  # SNI carried the name although the socket went to 127.0.0.1


def _zeros_gzip(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes made without compressing them all (after a full flush
    each MiB compresses to the same bytes); its trailer is wrong, and no reader gets that far."""
    import zlib

    block = bytes(1024 * 1024)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + piece * (size // len(block) - 1) + compressor.flush()


_BOUNDED_FETCH = """
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from i_web.address import AddressPolicy
from i_web.errors import WebError
from i_web.fetch import fetch
try:
    out = fetch(sys.argv[1], 100, AddressPolicy.from_entries(["127.0.0.1/32"]), "i-web-test")
    print("fetched:", "body truncated" in out, len(out))
except WebError as exc:
    print("refused:", exc)
"""


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("gzip", "fetched: True"), ("gzip, gzip", "refused: unsupported stacked Content-Encoding 'gzip, gzip'")],
)
def test_a_ten_gib_bomb_stays_bounded_under_a_1_gib_address_space(server: Server, encoding: str, expected: str) -> None:
    import sys

    inner = _zeros_gzip(10 * 1024**3)
    bomb = gzip.compress(inner, 9) if encoding == "gzip, gzip" else inner
    server.routes["/bomb"] = lambda h: send(h, 200, bomb, "text/plain", {"Content-Encoding": encoding})
    done = subprocess.run(
        [sys.executable, "-c", _BOUNDED_FETCH, server.url("/bomb")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith(expected)
