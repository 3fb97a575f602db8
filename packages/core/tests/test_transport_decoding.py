"""Content-Encoding is undone a bounded step per layer: a stacked bomb stops at the body cap.

The bomb tests run the client in a subprocess under a 1 GiB address-space limit, so a regression
(a layer inflating a whole chunk, as httpx does) fails with a MemoryError instead of eating the machine.
"""

from __future__ import annotations

import gzip
import http.server
import subprocess
import sys
import textwrap
import threading
import zlib
from collections.abc import Iterator

import orjson
import pytest

from i_core.decoding import STEP, decoded
from i_core.errors import TransportError

GIB = 1024**3


def zeros_gzip(size: int) -> bytes:
    """A gzip member of ``size`` zero bytes, made without compressing them all: after a full flush
    the compressor starts afresh, so each further MiB compresses to the same bytes. Its trailer is
    wrong (no reader gets that far)."""
    block = bytes(1024 * 1024)
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    head = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    piece = compressor.compress(block) + compressor.flush(zlib.Z_FULL_FLUSH)
    return head + piece * (size // len(block) - 1) + compressor.flush()


@pytest.fixture(scope="module")
def double_gzip_bomb() -> bytes:
    return gzip.compress(zeros_gzip(10 * GIB), 9)


class _Server(http.server.ThreadingHTTPServer):
    body = b""
    encoding = ""


class _Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-encoding", self.server.encoding)
        self.send_header("content-length", str(len(self.server.body)))
        self.end_headers()
        try:
            self.wfile.write(self.server.body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def serve() -> Iterator[object]:
    server = _Server(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def set_body(body: bytes, encoding: str) -> str:
        server.body, server.encoding = body, encoding
        return f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions"

    yield set_body
    server.shutdown()
    server.server_close()


def deflate_raw(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


TEXT = b'{"answer": "' + b"x" * 300_000 + b'"}'


@pytest.mark.parametrize(
    ("header", "encode"),
    [
        ("", lambda b: b),
        ("identity", lambda b: b),
        ("gzip", gzip.compress),
        ("x-gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", deflate_raw),
        ("gzip, gzip", lambda b: gzip.compress(gzip.compress(b))),
        ("deflate, gzip", lambda b: gzip.compress(zlib.compress(b))),
        ("gzip, identity, deflate", lambda b: deflate_raw(gzip.compress(b))),
    ],
)
def test_every_stack_decodes_in_bounded_steps(header: str, encode: object) -> None:
    raw = encode(TEXT)  # type: ignore[operator]
    pieces = list(decoded([raw[i : i + 1000] for i in range(0, len(raw), 1000)], header))
    assert b"".join(pieces) == TEXT
    assert max(len(piece) for piece in pieces) <= STEP


def test_a_coding_that_cannot_be_bounded_is_refused() -> None:
    with pytest.raises(TransportError, match="'br' is not one of the codings asked for"):
        list(decoded([b"x"], "gzip, br"))


def test_a_corrupt_body_is_a_transport_error() -> None:
    with pytest.raises(TransportError, match="not valid gzip data"):
        list(decoded([b"not gzip at all"], "gzip"))


def test_the_transport_decodes_a_stacked_body(serve: object) -> None:
    from i_core.transport import Transport

    url = serve(gzip.compress(gzip.compress(orjson.dumps({"ok": True}))), "gzip, gzip")  # type: ignore[operator]
    with Transport(retries=0) as transport:
        assert transport.post(url, {}, {}, stream=False, on_retry=lambda *_: None) == {"ok": True}


_CLIENT = textwrap.dedent(
    """
    import resource, sys
    resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
    from i_core.errors import TransportError
    from i_core.transport import Transport
    with Transport(retries=0, timeout=120) as transport:
        try:
            transport.post(sys.argv[1], {}, {}, stream=False, on_retry=lambda *_: None)
        except TransportError as exc:
            print("stopped:", exc)
    """
)


def test_a_double_gzip_bomb_stops_at_the_cap_under_1_gib(serve: object, double_gzip_bomb: bytes) -> None:
    assert len(double_gzip_bomb) < 200_000  # 10 GiB inflated
    url = serve(double_gzip_bomb, "gzip, gzip")  # type: ignore[operator]
    done = subprocess.run([sys.executable, "-c", _CLIENT, url], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "stopped: model response body exceeds the 50331648 byte cap" in done.stdout
