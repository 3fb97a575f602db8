"""Loopback HTTP servers scripted per test: every fault the worker must survive is served here."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

Route = Callable[[http.server.BaseHTTPRequestHandler], None]


@dataclass
class Server:
    """A threading HTTP server on a loopback address with a route table and a request log."""

    host: str
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[tuple[str, str, dict[str, str], bytes]] = field(default_factory=list)
    httpd: http.server.ThreadingHTTPServer | None = None

    @property
    def port(self) -> int:
        assert self.httpd is not None
        return self.httpd.server_port

    def url(self, path: str = "/") -> str:
        return f"http://{self.host}:{self.port}{path}"


def _handler_for(server: Server) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _dispatch(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            server.requests.append((self.command, self.path, dict(self.headers.items()), body))
            route = server.routes.get(self.path.split("?", 1)[0])
            if route is None:
                send(self, 404, b"not found", "text/plain")
                return
            try:
                route(self)
            except (BrokenPipeError, ConnectionResetError):
                pass

        do_GET = _dispatch
        do_POST = _dispatch

        def log_message(self, format: str, *args: object) -> None:
            pass

    return Handler


def send(
    handler: http.server.BaseHTTPRequestHandler,
    status: int,
    body: bytes,
    content_type: str | None = "text/html; charset=utf-8",
    headers: dict[str, str] | None = None,
) -> None:
    """Answer with a complete body."""
    handler.send_response(status)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class _QuietServer(http.server.ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients hanging up mid-body is what several tests provoke


def start(host: str) -> Server:
    """Start a server on ``host`` port 0 in a daemon thread."""
    server = Server(host)
    httpd = _QuietServer((host, 0), _handler_for(server))
    httpd.daemon_threads = True
    server.httpd = httpd
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    return server
