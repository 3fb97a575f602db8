"""The server: OpenAI, OpenAI Responses and Anthropic endpoints on loopback, one script step per request.

OpenAI Chat Completions is served at ``/v1/chat/completions`` (``base_url`` = ``http://HOST:PORT/v1``),
the OpenAI Responses API at ``/v1/responses`` (the same ``base_url``) and Anthropic Messages at
``/v1/messages`` (``root_url`` = ``http://HOST:PORT``, because the anthropic adapter appends
``/v1/messages`` itself). A request is recorded, checked like a real
provider would (``wire``), refused when it does not fit ``context_window`` (``overflow``; no step is
consumed), and otherwise answered with the next step. GETs are capacity probes (``capacity``),
recorded in ``probes``, not in ``requests``; other GETs are 404.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import orjson

from i_scripted.anthropic_replies import anthropic_body, anthropic_events
from i_scripted.capacity import models_body, props_body
from i_scripted.counting import COUNT_PATHS, Counting
from i_scripted.openai_replies import openai_body, openai_chunks
from i_scripted.overflow import CONTEXT_STYLES, context_error
from i_scripted.replies import capped
from i_scripted.responses_replies import responses_body, responses_events
from i_scripted.script import ScriptError, Step, check_step
from i_scripted.tokens import prompt_tokens, requested_output_tokens
from i_scripted.wire import wire_problem

SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
RESPONSES_PATH = "/v1/responses"
_KINDS = {OPENAI_PATH: "openai", ANTHROPIC_PATH: "anthropic", RESPONSES_PATH: "responses"}
_BODIES = {"openai": openai_body, "anthropic": anthropic_body, "responses": responses_body}
_EVENTS = {"openai": openai_chunks, "anthropic": anthropic_events, "responses": responses_events}


@dataclass
class RecordedRequest:
    """One request the server received; secret header values are replaced by ``<redacted>``."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False, default=b"")


class ScriptedModel:
    """The scripted server; use as a context manager or call start()/stop().

    ``context_window`` (tokens) turns on context enforcement and the capacity endpoints;
    ``context_style`` picks whose error bodies and endpoints to imitate (``i_scripted.overflow``).
    """

    def __init__(
        self,
        script: Sequence[Step],
        host: str = "127.0.0.1",
        port: int = 0,
        on_request: Callable[[RecordedRequest], None] | None = None,
        context_window: int | None = None,
        context_style: str | None = None,
        model_name: str = "scripted-1",
    ) -> None:
        for index, step in enumerate(script):
            check_step(step, f"step {index}")
        if context_window is not None and (
            not isinstance(context_window, int) or isinstance(context_window, bool) or context_window < 1
        ):
            raise ValueError(f"context_window must be a positive number of tokens, not {context_window!r}")
        if context_style is not None and context_style not in CONTEXT_STYLES:
            raise ValueError(f"context_style must be one of {', '.join(CONTEXT_STYLES)}, not {context_style!r}")
        self.script = list(script)
        self.requests: list[RecordedRequest] = []
        self.probes: list[RecordedRequest] = []  # capacity discovery and token counting: not model requests
        self.served = 0
        self.rejections = 0  # requests refused because they did not fit context_window
        self.context_window = context_window
        self.context_style = context_style
        self.model_name = model_name
        self._on_request = on_request
        self._counting = Counting()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT``: the anthropic ``base_url``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``: the openai/deepseek/responses ``base_url``."""
        return self.root_url + "/v1"

    def base_url_for(self, protocol: str) -> str:
        """The ``base_url`` a config of ``protocol`` should use."""
        return self.root_url if protocol == "anthropic" else self.base_url

    def start(self) -> ScriptedModel:
        """Serve in a background thread."""
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), name="scripted-model", daemon=True
        )
        self._thread.start()
        return self

    def serve(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C), then close: the command line's loop."""
        try:
            self._server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self._stopping.set()
            self._server.server_close()

    def stop(self) -> None:
        """Stop serving; requests still waiting on a ``delay`` are released."""
        self._stopping.set()
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join()
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> ScriptedModel:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)
        if self._on_request is not None:
            self._on_request(request)

    def _probe(self, request: RecordedRequest) -> dict[str, Any] | None:
        """Record a capacity-discovery GET; its answer, or None (404)."""
        with self._lock:
            self.probes.append(request)
        if self.context_window is None:
            return None
        style = self.context_style or "openai"
        if request.path == "/props" and style == "llamacpp":
            return props_body(self.context_window, self.model_name)
        if request.path == "/v1/models":
            return models_body(self.context_window, self.model_name, style)
        return None

    def _overflow(self, kind: str, body: dict[str, Any], prompt: int) -> dict[str, Any] | None:
        """The error body when ``body`` does not fit the context window (counted as a rejection)."""
        if self.context_window is None:
            return None
        error = context_error(self.context_style or kind, self.context_window, prompt, requested_output_tokens(body))
        if error is not None:
            with self._lock:
                self.rejections += 1
        return error

    def _next_step(self, body: Any) -> dict[str, Any] | None:
        with self._lock:
            if self.served >= len(self.script):
                return None
            step = self.script[self.served]
            self.served += 1
        if callable(step):
            step = step(body)
            check_step(step, f"step {self.served - 1} (returned by a callable)")
            if callable(step):
                raise ScriptError(f"step {self.served - 1}: a callable must return a step object")
        return step


def _handler_for(model: ScriptedModel) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        scripted = model

    return Handler


def _redacted(headers: Message) -> dict[str, str]:
    """Request headers with lower-case names; secret values become ``<redacted>`` (presence kept)."""
    return {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedModel

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests and the demo keep stderr for their own output

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        answer = self.scripted._probe(RecordedRequest("GET", path, _redacted(self.headers), None))
        if answer is None:
            self._send_json(404, {"error": {"message": "scripted model: only POST is served", "type": "not_found"}})
        else:
            self._send_json(200, answer)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = _redacted(self.headers)
        try:
            body: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        if self.path in COUNT_PATHS:  # token counting: not a model request, no step consumed
            with self.scripted._lock:
                self.scripted.probes.append(RecordedRequest("POST", self.path, headers, body, raw))
            model = self.scripted
            self._send_json(*model._counting.answer(model.context_style, self.path, body, model.context_window))
            return
        self.scripted._record(RecordedRequest("POST", self.path, headers, body, raw))
        kind = _KINDS.get(self.path)
        if kind is None:
            message = (
                f"scripted model: nothing is served at {self.path}; OpenAI chat completions at {OPENAI_PATH} "
                f"and responses at {RESPONSES_PATH} (base_url .../v1), Anthropic messages at {ANTHROPIC_PATH} "
                "(base_url is the root)"
            )
            self._send_json(404, {"error": {"message": message, "type": "not_found"}})
            return
        problem = (
            "request body is not a JSON object" if not isinstance(body, dict) else wire_problem(kind, body, headers)
        )
        if problem is not None:
            self._send_error(kind, 400, f"scripted model: invalid request: {problem}", "invalid_request_error")
            return
        prompt = prompt_tokens(kind, body)
        overflow = self.scripted._overflow(kind, body, prompt)
        if overflow is not None:  # a real server refuses before generating: no step is consumed
            self._send_json(400, overflow)
            return
        try:
            step = self.scripted._next_step(body)
        except Exception as exc:  # a broken callable must show up in the test, not hang it
            self._send_error(kind, 500, f"scripted model: step failed: {exc}", "api_error")
            return
        if step is None:
            count = self.scripted.served
            self._send_error(kind, 500, f"scripted model: script exhausted after {count} requests", "api_error")
            return
        self._answer(kind, body, step, prompt)

    def _answer(self, kind: str, request: dict[str, Any], step: dict[str, Any], prompt: int) -> None:
        if step.get("delay") and self.scripted._stopping.wait(float(step["delay"])):
            return  # the server is stopping: leave without answering
        stream = step.get("stream")
        stream = bool(request.get("stream")) if stream is None else bool(stream)
        extra = dict(step.get("headers") or {})
        if step.get("redirect"):
            self._send(307, b"", "text/plain", {**extra, "location": step["redirect"]})
        elif step.get("raw_body") is not None:
            raw = step["raw_body"]
            raw = raw.encode() if isinstance(raw, str) else raw
            content_type = "text/event-stream" if stream else "application/json"
            self._send(step.get("status", 200), raw, content_type, extra, chunk=step.get("chunk_bytes"))
        elif step.get("status", 200) >= 400:
            message = step.get("error_message") or f"scripted error {step['status']}"
            self._send_error(kind, step["status"], message, step.get("error_type") or "api_error", extra)
        elif step.get("body_bytes"):
            self._send_huge(int(step["body_bytes"]), stream)
        elif stream:
            self._send_sse(_EVENTS[kind](request, capped(request, step), prompt), extra)
        else:
            self._send_json(200, _BODIES[kind](request, capped(request, step), prompt), extra)

    def _send_error(
        self, kind: str, status: int, message: str, error_type: str, extra: dict[str, str] | None = None
    ) -> None:
        if kind == "anthropic":
            body = {"type": "error", "error": {"type": error_type, "message": message}}
        else:
            body = {"error": {"message": message, "type": error_type, "code": status}}
        self._send_json(status, body, extra)

    def _send_json(self, status: int, body: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        self._send(status, orjson.dumps(body), "application/json", extra)

    def _send(
        self,
        status: int,
        raw: bytes,
        content_type: str,
        extra: dict[str, str] | None = None,
        *,
        chunk: int | None = None,
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(raw)))
            for key, value in (extra or {}).items():
                self.send_header(key, str(value))
            self.end_headers()
            if chunk is None:
                self.wfile.write(raw)
                return
            self.wfile.flush()
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            for start in range(0, len(raw), chunk):
                self.wfile.write(raw[start : start + chunk])
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_huge(self, size: int, stream: bool) -> None:
        prefix = b'data: {"pad":"' if stream else b'{"pad":"'
        chunk = b"x" * (1024 * 1024)
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream" if stream else "application/json")
            self.send_header("content-length", str(size))
            self.end_headers()
            self.wfile.write(prefix)
            left = size - len(prefix)
            while left > 0:
                piece = chunk[: min(left, len(chunk))]
                self.wfile.write(piece)
                left -= len(piece)
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True

    def _send_sse(self, events: Iterator[tuple[str | None, Any]], extra: dict[str, str]) -> None:
        try:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("connection", "close")
            for key, value in extra.items():
                self.send_header(key, str(value))
            self.end_headers()
            for name, data in events:
                frame = b"" if name is None else f"event: {name}\n".encode()
                payload = data.encode() if isinstance(data, str) else orjson.dumps(data)
                self.wfile.write(frame + b"data: " + payload + b"\n\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True
