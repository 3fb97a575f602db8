"""HTTP servers on loopback for the web checks: a page, a redirect and a search endpoint.

Each server counts the requests it received, so a check can prove that a refused address was
never contacted (refused before connecting, not after).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

PAGE_TEXT = "The loopback check page."


class Loopback:
    """A threaded HTTP server on ``host`` (port chosen by the OS) that serves the check's routes."""

    def __init__(self, host: str = "127.0.0.1", *, redirect_to: str | None = None) -> None:
        self.hits: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits.append(self.path)
                if self.path.startswith("/redirect") and redirect_to is not None:
                    self._send(302, b"", "text/plain", {"Location": redirect_to})
                elif self.path.startswith("/search"):
                    results = {"results": [{"title": "Check result", "url": "https://example.com/r", "snippet": "s"}]}
                    self._send(200, json.dumps(results).encode(), "application/json")
                else:
                    page = f"<html><head><title>Check</title></head><body><p>{PAGE_TEXT}</p></body></html>"
                    self._send(200, page.encode(), "text/html; charset=utf-8")

            def _send(self, status: int, body: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                return  # a check's output is its table

        self.server = ThreadingHTTPServer((host, 0), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Loopback:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
