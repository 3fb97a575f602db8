"""A scripted OpenAI- and Anthropic-compatible model server on loopback, for tests and demos.

OpenAI Chat Completions is served at ``/v1/chat/completions`` (``base_url`` = ``http://HOST:PORT/v1``)
and Anthropic Messages at ``/v1/messages`` (``root_url`` = ``http://HOST:PORT``, because the
anthropic adapter appends ``/v1/messages`` itself). Each request consumes the next script step.

Usage (when a step has no ``usage``) is counted from the content, never from the byte length, so a
test sees the density a real server reports:

- ``reference_tokens(text)`` splits ``text`` GPT-2 style with ``_SPLIT``: an optional leading space
  plus an ASCII letter run, an optional space plus 1-3 digits, one non-ASCII character, an optional
  space plus one ASCII punctuation/control character, or a whitespace run. Every piece is one token,
  except a letter run of L letters, which costs ceil(L / 7). Examples: ``"Hello world."`` = 3,
  ``"internationalization"`` = 3, ``"12345"`` = 2, ``"中文!"`` = 3, ``'{"id": 7}'`` = 7.
  Measured densities: plain English prose (the GPL-3 and Apache-2.0 texts) 4.3-4.6 bytes/token,
  technical Markdown (README.md, SPEC.md) ~3.4; Python code (this file) ~3.1; id-dense JSON
  (uuids, hex shas, call ids, paths, numbers) 1.7-1.9; Chinese 3.0 for Han text and punctuation
  (3 UTF-8 bytes a character, one token each), ~2.7 mixed with ASCII (gettext catalogs). Real
  BPE tokenizers show the same shape; this is not any provider's tokenizer.
- ``prompt_tokens(kind, body)`` frames a request like a chat template: 3, plus for each message
  4 + its content (a string, or the sum of its parts: text = its tokens, an image = 85, an
  Anthropic ``tool_use`` = 3 + name + JSON of its input, ``tool_result`` = its content,
  ``thinking`` = its text, any other part = the tokens of its JSON), plus for each OpenAI tool
  call 3 + name + arguments, plus for each tool schema 8 + the tokens of its compact JSON (the
  ``function`` object for OpenAI tools, the tool object for Anthropic; ``cache_control`` dropped).
  An Anthropic ``system`` counts as one more message (4 + its text).
- Output tokens: the reply text + reasoning + each tool call's name and arguments, at least 1. A
  text longer than the request's ``max_completion_tokens``/``max_tokens`` is cut at that many
  tokens and finishes with ``length``, as a real server does.

A step's ``"usage": "omit"`` sends no usage at all; a usage object is sent as is.

Context enforcement (``context_window=N``): before a step is consumed, a request whose prompt, or
prompt + requested output (``max_completion_tokens``/``max_tokens``), does not fit is refused with
HTTP 400 and the body the real server sends (``context_style``; the default follows the path:
``openai`` or ``anthropic``); ``rejections`` counts them and no step is used. The styles:

- ``openai``: prompt > N, or prompt + max_tokens (0 when absent) > N; ``context_length_exceeded``.
- ``anthropic``: prompt > N ("prompt is too long"), or prompt + max_tokens > N.
- ``llamacpp``: prompt >= N only (llama-server checks the prompt alone; a too-large ``max_tokens``
  is accepted and would stop at the context end); ``exceed_context_size_error`` with the counts.
- ``vllm``: prompt >= N, or prompt + max_tokens > N when max_tokens is given (vLLM's current
  ``BadRequestError`` messages).

With a window set, ``GET /props`` answers like llama-server (style ``llamacpp`` only:
``default_generation_settings.n_ctx``), and ``GET /v1/models`` lists the model (with vLLM's
``max_model_len`` for style ``vllm``, without any context field otherwise). Other GETs are 404.
GETs are recorded in ``probes``, not in ``requests``.
"""

from __future__ import annotations

import argparse
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

Step = dict[str, Any] | Callable[[Any], dict[str, Any]]

STEP_KEYS = frozenset(
    {
        "text",
        "reasoning",
        "tool_calls",
        "finish_reason",
        "usage",
        "status",
        "error_message",
        "error_type",
        "headers",
        "delay",
        "raw_body",
        "redirect",
        "body_bytes",
        "stream",
    }
)
SECRET_HEADERS = frozenset({"authorization", "x-api-key", "api-key", "proxy-authorization", "cookie"})
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
_ANTHROPIC_FINISH = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
CONTEXT_STYLES = ("openai", "anthropic", "llamacpp", "vllm")
IMAGE_TOKENS = 85
_IMAGE_PARTS = frozenset({"image_url", "image", "input_image"})
# Linear time: every alternative is a single character class or a run of one, no nesting.
_SPLIT = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}|[^\x00-\x7f]| ?[^\sA-Za-z0-9\x80-\U0010ffff]|\s+")


class ScriptError(ValueError):
    """A script (or a step a callable returned) is invalid."""


@dataclass
class RecordedRequest:
    """One request the server received; secret header values are replaced by ``<redacted>``."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    raw: bytes = field(repr=False, default=b"")


def check_step(step: Any, where: str = "step") -> None:
    """Raise ScriptError when ``step`` is not a valid step (a callable is checked when it answers)."""
    if callable(step):
        return
    if not isinstance(step, dict):
        raise ScriptError(f"{where}: a step must be an object or a callable, not {type(step).__name__}")
    unknown = sorted(set(step) - STEP_KEYS)
    if unknown:
        raise ScriptError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(STEP_KEYS))}")
    for index, call in enumerate(step.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"{where}: tool_calls[{index}] needs a name")
    usage = step.get("usage")
    if usage is not None and usage != "omit" and not isinstance(usage, dict):
        raise ScriptError(f'{where}: usage must be an object or "omit"')


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """The steps of a JSON script file: a list of steps, or ``{"steps": [...]}``."""
    data = orjson.loads(Path(path).read_bytes())
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise ScriptError(f"{path}: a script is a JSON list of steps (or an object with a steps list)")
    for index, step in enumerate(steps):
        check_step(step, f"{path}: step {index}")
    return steps


# --- token counting: the documented rule of the module docstring ---------------------------------


def reference_tokens(text: str) -> int:
    """Tokens of ``text`` by the reference rule: GPT-2-style pieces, one token each, except that an
    ASCII letter run of L letters costs ceil(L / 7); every non-ASCII character is its own token."""
    count = 0
    for match in _SPLIT.finditer(text):
        piece = match.group()
        letters = len(piece.lstrip())
        count += (letters + 6) // 7 if piece.strip().isalpha() and piece.isascii() else 1
    return count


def _json_tokens(value: Any) -> int:
    return reference_tokens(orjson.dumps(value).decode())


def _string_tokens(value: Any) -> int:
    """Tokens of a wire string field (a non-string is counted as its JSON)."""
    return reference_tokens(value) if isinstance(value, str) else _json_tokens(value)


def _part_tokens(part: Any) -> int:
    """Tokens of one content part (OpenAI) or content block (Anthropic)."""
    if isinstance(part, str):
        return reference_tokens(part)
    if not isinstance(part, dict):
        return _json_tokens(part)
    kind = part.get("type")
    if kind == "text":
        return _string_tokens(part.get("text") or "")
    if kind in _IMAGE_PARTS:
        return IMAGE_TOKENS
    if kind == "tool_use":
        return 3 + _string_tokens(part.get("name") or "") + _json_tokens(part.get("input", {}))
    if kind == "tool_result":
        return _content_tokens(part.get("content"))
    if kind == "thinking":
        return _string_tokens(part.get("thinking") or "")
    return _json_tokens(part)


def _content_tokens(content: Any) -> int:
    """Tokens of a message's content: a string, a list of parts/blocks, or nothing (0)."""
    if content is None:
        return 0
    if isinstance(content, list):
        return sum(_part_tokens(part) for part in content)
    return _part_tokens(content)


def _schema_tokens(tool: Any) -> int:
    """8 + the tokens of a tool schema's compact JSON (an OpenAI tool's ``function`` object)."""
    schema = tool.get("function", tool) if isinstance(tool, dict) else tool
    if isinstance(schema, dict):
        schema = {key: value for key, value in schema.items() if key != "cache_control"}
    return 8 + _json_tokens(schema)


def _openai_message_tokens(message: Any) -> int:
    if not isinstance(message, dict):
        return 4 + _json_tokens(message)
    total = 4 + _content_tokens(message.get("content"))
    for call in message.get("tool_calls") or []:
        function = (call.get("function") if isinstance(call, dict) else None) or {}
        total += 3 + _string_tokens(function.get("name") or "") + _string_tokens(function.get("arguments") or "")
    return total


def prompt_tokens(kind: str, body: dict[str, Any]) -> int:
    """Input tokens of a wire request ``body`` of ``kind`` (``openai`` or ``anthropic``), framed like
    a chat template: 3 + per message (4 + content + tool calls) + per tool schema (8 + its JSON)."""
    if kind not in ("openai", "anthropic"):
        raise ValueError(f"prompt_tokens: kind must be openai or anthropic, not {kind!r}")
    total = 3
    messages = body.get("messages") or []
    if kind == "openai":
        total += sum(_openai_message_tokens(message) for message in messages)
    else:
        if body.get("system"):
            total += 4 + _content_tokens(body["system"])
        total += sum(4 + _content_tokens(m.get("content") if isinstance(m, dict) else m) for m in messages)
    return total + sum(_schema_tokens(tool) for tool in body.get("tools") or [])


def requested_output_tokens(body: dict[str, Any]) -> int | None:
    """The output the request reserves: ``max_completion_tokens``, else ``max_tokens``; None when absent."""
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _output_tokens(request: dict[str, Any], step: dict[str, Any]) -> int:
    """Tokens of a reply: text + reasoning + each tool call's name and arguments; at least 1."""
    total = reference_tokens(_text(request, step)) + reference_tokens(step.get("reasoning") or "")
    for call in step.get("tool_calls") or []:
        total += reference_tokens(call["name"]) + reference_tokens(_arguments(call))
    return max(1, total)


# --- context enforcement: the bodies real servers send when a request does not fit -------------


def _openai_overflow(window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    asked = output or 0
    if prompt > window:
        message = (
            f"This model's maximum context length is {window} tokens. However, your messages resulted in "
            f"{prompt} tokens. Please reduce the length of the messages."
        )
    elif prompt + asked > window:
        message = (
            f"This model's maximum context length is {window} tokens. However, you requested {prompt + asked} "
            f"tokens ({prompt} in the messages, {asked} in the completion). "
            "Please reduce the length of the messages or completion."
        )
    else:
        return None
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    }


def _anthropic_overflow(window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    asked = output or 0
    if prompt > window:
        message = f"prompt is too long: {prompt} tokens > {window} maximum"
    elif prompt + asked > window:
        # Anthropic's wording when prompt + max_tokens overflow (as reported by its API since Claude 3.7).
        message = (
            f"input length and `max_tokens` exceed context limit: {prompt} + {asked} > {window}, "
            "decrease input length or `max_tokens` and try again"
        )
    else:
        return None
    return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _llamacpp_overflow(window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    # llama.cpp tools/server/server-context.cpp: `if (slot.task->n_tokens() >= slot.n_ctx)` sends
    # ERROR_TYPE_EXCEED_CONTEXT_SIZE (HTTP 400, type exceed_context_size_error) with this message;
    # server-task.cpp adds n_prompt_tokens and n_ctx. n_predict is not part of the check.
    if prompt < window:
        return None
    message = f"request ({prompt} tokens) exceeds the available context size ({window} tokens), try increasing it"
    return {
        "error": {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": window,
        }
    }


def _vllm_overflow(window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    # vLLM entrypoints/openai (serving engine _validate_input, VLLMValidationError, whose str() appends
    # "(parameter=..., value=...)"; create_error_response sets type BadRequestError, param, code 400).
    if prompt >= window:
        param, value = "input_tokens", prompt
        message = (
            f"This model's maximum context length is {window} tokens. However, your request has {prompt} "
            "input tokens. Please reduce the length of the input messages."
        )
    elif output is not None and prompt + output > window:
        param, value = "max_tokens", output
        message = (
            f"'max_tokens' or 'max_completion_tokens' is too large: {output}. This model's maximum context "
            f"length is {window} tokens and your request has {prompt} input tokens ({output} > {window} - {prompt})."
        )
    else:
        return None
    return {
        "error": {
            "message": f"{message} (parameter={param}, value={value})",
            "type": "BadRequestError",
            "param": param,
            "code": 400,
        }
    }


_OVERFLOW: dict[str, Callable[[int, int, int | None], dict[str, Any] | None]] = {
    "openai": _openai_overflow,
    "anthropic": _anthropic_overflow,
    "llamacpp": _llamacpp_overflow,
    "vllm": _vllm_overflow,
}


def context_error(style: str, window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    """The HTTP 400 body a ``style`` server sends for ``prompt`` (+ ``output``) tokens in ``window``,
    or None when the request fits."""
    return _OVERFLOW[style](window, prompt, output)


def _props(window: int, model_name: str) -> dict[str, Any]:
    """``GET /props`` of llama-server (the fields a client reads; n_ctx is the per-slot window)."""
    return {
        "default_generation_settings": {"params": {"n_predict": -1}, "n_ctx": window},
        "total_slots": 1,
        "model_alias": model_name,
        "model_path": f"/models/{model_name}.gguf",
        "modalities": {"vision": False, "audio": False},
        "build_info": "scripted",
    }


def _models(window: int, model_name: str, style: str) -> dict[str, Any]:
    """``GET /v1/models``: OpenAI's list; vLLM's model card adds ``max_model_len``."""
    card: dict[str, Any] = {"id": model_name, "object": "model", "created": 0, "owned_by": "scripted"}
    if style == "vllm":
        card.update({"owned_by": "vllm", "root": model_name, "parent": None, "max_model_len": window})
    elif style == "llamacpp":
        card["owned_by"] = "llamacpp"
    return {"object": "list", "data": [card]}


class ScriptedModel:
    """The scripted server; use as a context manager or call start()/stop().

    ``context_window`` (tokens) turns on context enforcement and the capacity endpoints;
    ``context_style`` picks whose error bodies and endpoints to imitate (see the module docstring).
    """

    def __init__(
        self,
        script: list[Step],
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
        self.probes: list[RecordedRequest] = []  # the GETs (capacity discovery); not model requests
        self.served = 0
        self.rejections = 0  # requests refused because they did not fit context_window
        self.context_window = context_window
        self.context_style = context_style
        self.model_name = model_name
        self._on_request = on_request
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._server = ThreadingHTTPServer((host, port), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def root_url(self) -> str:
        """``http://HOST:PORT``: the anthropic ``base_url``."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT/v1``: the openai/deepseek ``base_url``."""
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

    def _overflow(self, kind: str, body: dict[str, Any], prompt: int) -> dict[str, Any] | None:
        """The error body when ``body`` does not fit the context window (counted as a rejection)."""
        if self.context_window is None:
            return None
        error = context_error(self.context_style or kind, self.context_window, prompt, requested_output_tokens(body))
        if error is not None:
            with self._lock:
                self.rejections += 1
        return error

    def _capacity(self, path: str) -> dict[str, Any] | None:
        """The answer to a capacity-discovery GET, or None (404)."""
        if self.context_window is None:
            return None
        style = self.context_style or "openai"
        if path == "/props" and style == "llamacpp":
            return _props(self.context_window, self.model_name)
        if path == "/v1/models":
            return _models(self.context_window, self.model_name, style)
        return None

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


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedModel

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests and the demo keep stderr for their own output

    def do_GET(self) -> None:
        path = urlsplit(self.path).path
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        with self.scripted._lock:
            self.scripted.probes.append(RecordedRequest("GET", path, headers, None))
        answer = self.scripted._capacity(path)
        if answer is None:
            self._send_json(404, {"error": {"message": "scripted model: only POST is served", "type": "not_found"}})
        else:
            self._send_json(200, answer)

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        headers = {k.lower(): ("<redacted>" if k.lower() in SECRET_HEADERS else v) for k, v in self.headers.items()}
        try:
            body: Any = orjson.loads(raw)
        except orjson.JSONDecodeError:
            body = None
        self.scripted._record(RecordedRequest("POST", self.path, headers, body, raw))
        kind = {OPENAI_PATH: "openai", ANTHROPIC_PATH: "anthropic"}.get(self.path)
        if kind is None:
            message = (
                f"scripted model: nothing is served at {self.path}; OpenAI chat completions at {OPENAI_PATH} "
                f"(base_url .../v1), Anthropic messages at {ANTHROPIC_PATH} (base_url is the root)"
            )
            self._send_json(404, {"error": {"message": message, "type": "not_found"}})
            return
        problem = (
            "request body is not a JSON object" if not isinstance(body, dict) else _wire_problem(kind, body, headers)
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
            self._send(step.get("status", 200), raw, "text/event-stream" if stream else "application/json", extra)
        elif step.get("status", 200) >= 400:
            message = step.get("error_message") or f"scripted error {step['status']}"
            self._send_error(kind, step["status"], message, step.get("error_type") or "api_error", extra)
        elif step.get("body_bytes"):
            self._send_huge(int(step["body_bytes"]), stream)
        elif stream:
            step = _capped(request, step)
            events = _openai_chunks if kind == "openai" else _anthropic_events
            self._send_sse(events(request, step, prompt), extra)
        else:
            step = _capped(request, step)
            build = _openai_body if kind == "openai" else _anthropic_body
            self._send_json(200, build(request, step, prompt), extra)

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

    def _send(self, status: int, raw: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("content-type", content_type)
            self.send_header("content-length", str(len(raw)))
            for key, value in (extra or {}).items():
                self.send_header(key, str(value))
            self.end_headers()
            self.wfile.write(raw)
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


# --- wire checks: what a real provider would reject, so adapter bugs fail the tests -------------


def _private_keys(messages: list[Any]) -> str | None:
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages[{index}] is not an object"
        private = [key for key in message if key.startswith("_")]
        if private:
            return f"messages[{index}] carries private field(s) {', '.join(private)}"
    return None


def _wire_problem(kind: str, body: dict[str, Any], headers: dict[str, str]) -> str | None:
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model is missing"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages must be a non-empty list"
    problem = _private_keys(messages)
    if problem:
        return problem
    if kind == "openai":
        return _openai_problem(body, messages)
    if "anthropic-version" not in headers:
        return "anthropic-version header is missing"
    return _anthropic_problem(body, messages)


def _openai_problem(body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    if "stream_options" in body and not body.get("stream"):
        return "stream_options is only allowed when stream is true"
    pending: set[str] = set()
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("system", "user", "assistant", "tool"):
            return f"messages[{index}].role {role!r} is invalid"
        if role != "tool" and pending:
            return f"messages[{index}]: tool call(s) {', '.join(sorted(pending))} have no result"
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                if not isinstance((call.get("function") or {}).get("arguments"), str):
                    return f"messages[{index}]: tool call arguments must be a JSON string"
                pending.add(call.get("id"))
        elif role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return f"messages[{index}]: tool_call_id {call_id!r} answers no pending tool call"
            pending.discard(call_id)
    return None


def _anthropic_problem(body: dict[str, Any], messages: list[dict[str, Any]]) -> str | None:
    if not isinstance(body.get("max_tokens"), int):
        return "max_tokens is required"
    if "system" in body and not isinstance(body["system"], str | list):
        return "system must be a string or a list of blocks"
    expected_ids: set[str] = set()
    previous = None
    for index, message in enumerate(messages):
        role = message.get("role")
        if role not in ("user", "assistant"):
            return f"messages[{index}].role {role!r} is invalid (system goes top-level)"
        if index == 0 and role != "user":
            return "the first message must be a user message"
        if role == previous:
            return f"messages[{index}]: roles must alternate (two {role} messages in a row)"
        previous = role
        blocks = message.get("content")
        if isinstance(blocks, str):
            blocks = [{"type": "text", "text": blocks}]
        if not isinstance(blocks, list) or not blocks:
            return f"messages[{index}].content must be a non-empty string or list"
        for block in blocks:
            if block.get("type") == "text" and not block.get("text"):
                return f"messages[{index}]: text content blocks must be non-empty"
        if role == "user":
            answered = {b.get("tool_use_id") for b in blocks if b.get("type") == "tool_result"}
            if answered - expected_ids:
                return f"messages[{index}]: tool_result for unknown tool_use id(s) {sorted(answered - expected_ids)}"
            if expected_ids - answered:
                return f"messages[{index}]: tool_use id(s) {sorted(expected_ids - answered)} have no tool_result"
            kinds = [b.get("type") for b in blocks]
            if "tool_result" in kinds and kinds.index("tool_result") != 0:
                return f"messages[{index}]: tool_result blocks must come first"
            expected_ids = set()
        else:
            if expected_ids:
                return f"messages[{index}]: tool_use id(s) {sorted(expected_ids)} have no tool_result"
            for block in blocks:
                if block.get("type") == "tool_use":
                    if not isinstance(block.get("input"), dict):
                        return f"messages[{index}]: tool_use input must be an object"
                    expected_ids.add(block.get("id"))
    return None


# --- replies ------------------------------------------------------------------------------------


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            _text_of(part.get("text") if part.get("type") == "text" else part.get("content"))
            for part in content
            if isinstance(part, dict) and part.get("type") in ("text", "tool_result")
        )
    return ""


def _last(request: dict[str, Any], what: str) -> str:
    """The last tool result or the last user text of ``request`` (either wire format)."""
    for message in reversed(request.get("messages") or []):
        role, content = message.get("role"), message.get("content")
        if what == "tool":
            if role == "tool":
                return _text_of(content)
            if role == "user" and isinstance(content, list):
                results = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
                if results:
                    return _text_of(results[-1].get("content"))
        elif role == "user":
            texts = [b for b in content if b.get("type") == "text"] if isinstance(content, list) else content
            text = _text_of(texts)
            if text:
                return text
    return ""


def _capped(request: dict[str, Any], step: dict[str, Any]) -> dict[str, Any]:
    """The step as a real server delivers it: a text longer than the requested output is cut there.

    A reply whose text counts more tokens than ``max_completion_tokens`` / ``max_tokens`` is cut at
    that many tokens (``reference_tokens``) and finishes with ``length``, as real servers do; a step
    with an explicit ``finish_reason`` or tool calls is sent as scripted.
    """
    cap = requested_output_tokens(request)
    text = _text(request, step)
    if cap is None or not text or step.get("finish_reason") or step.get("tool_calls") or reference_tokens(text) <= cap:
        return step
    low, high = 0, len(text)
    while low < high:  # the longest prefix that fits the cap
        middle = (low + high + 1) // 2
        if reference_tokens(text[:middle]) <= cap:
            low = middle
        else:
            high = middle - 1
    return {**step, "text": text[:low], "finish_reason": "length"}


def _text(request: dict[str, Any], step: dict[str, Any]) -> str:
    text = step.get("text") or ""
    if "{{" in text:
        text = text.replace("{{last_tool_result}}", _last(request, "tool"))
        text = text.replace("{{last_user_message}}", _last(request, "user"))
    return text


def _arguments(call: dict[str, Any]) -> str:
    arguments = call.get("arguments", {})
    return arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()


def _call_id(index: int, call: dict[str, Any], prefix: str, serial: int) -> str:
    return str(call.get("id") or f"{prefix}_{serial}_{index}")


def _pieces(text: str, size: int = 8) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def _openai_usage(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    completion = _output_tokens(request, step)
    # The stand-in has no prompt cache, and says so the way OpenAI does: zero cached tokens.
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
    }


def _openai_message(request: dict[str, Any], step: dict[str, Any], serial: int) -> dict[str, Any]:
    text = _text(request, step)
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not step.get("tool_calls") else None}
    if step.get("reasoning"):
        message["reasoning_content"] = step["reasoning"]
    calls = step.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": _call_id(i, c, "call", serial),
                "type": "function",
                "function": {"name": c["name"], "arguments": _arguments(c)},
            }
            for i, c in enumerate(calls)
        ]
    return message


def _openai_finish(step: dict[str, Any]) -> str:
    return step.get("finish_reason") or ("tool_calls" if step.get("tool_calls") else "stop")


def _openai_body(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any]:
    serial = len(request.get("messages") or [])
    message = _openai_message(request, step, serial)
    body: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(step)}],
    }
    usage = _openai_usage(request, step, prompt)
    if usage is not None:
        body["usage"] = usage
    return body


def _openai_chunks(request: dict[str, Any], step: dict[str, Any], prompt: int) -> Iterator[tuple[str | None, Any]]:
    serial = len(request.get("messages") or [])
    message = _openai_message(request, step, serial)
    base = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": request.get("model"),
    }

    def chunk(delta: dict[str, Any], finish: str | None = None) -> tuple[None, dict[str, Any]]:
        return None, {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield chunk({"role": "assistant", "content": ""})
    for piece in _pieces(message.get("reasoning_content") or "") if message.get("reasoning_content") else []:
        yield chunk({"reasoning_content": piece})
    for piece in _pieces(message["content"]) if message.get("content") else []:
        yield chunk({"content": piece})
    for index, call in enumerate(message.get("tool_calls") or []):
        head = {
            "index": index,
            "id": call["id"],
            "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""},
        }
        yield chunk({"tool_calls": [head]})
        for piece in _pieces(call["function"]["arguments"]):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, _openai_finish(step))
    usage = _openai_usage(request, step, prompt)
    if usage is not None and (request.get("stream_options") or {}).get("include_usage"):
        yield None, {**base, "choices": [], "usage": usage}
    yield None, "[DONE]"


def _anthropic_usage(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any] | None:
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    return {
        "input_tokens": prompt,
        "output_tokens": _output_tokens(request, step),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def _anthropic_blocks(request: dict[str, Any], step: dict[str, Any], serial: int) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if step.get("reasoning"):
        blocks.append({"type": "thinking", "thinking": step["reasoning"], "signature": f"scripted-signature-{serial}"})
    text = _text(request, step)
    if text:
        blocks.append({"type": "text", "text": text})
    for index, call in enumerate(step.get("tool_calls") or []):
        arguments = call.get("arguments", {})
        call_input = orjson.loads(arguments) if isinstance(arguments, str) else arguments
        blocks.append(
            {
                "type": "tool_use",
                "id": _call_id(index, call, "toolu", serial),
                "name": call["name"],
                "input": call_input,
            }
        )
    return blocks


def _anthropic_stop(step: dict[str, Any]) -> str:
    reason = step.get("finish_reason")
    if reason:
        return _ANTHROPIC_FINISH.get(reason, reason)
    return "tool_use" if step.get("tool_calls") else "end_turn"


def _anthropic_body(request: dict[str, Any], step: dict[str, Any], prompt: int) -> dict[str, Any]:
    serial = len(request.get("messages") or [])
    blocks = _anthropic_blocks(request, step, serial)
    body: dict[str, Any] = {
        "id": f"msg_scripted_{serial}",
        "type": "message",
        "role": "assistant",
        "model": request.get("model"),
        "content": blocks,
        "stop_reason": _anthropic_stop(step),
        "stop_sequence": None,
    }
    usage = _anthropic_usage(request, step, prompt)
    if usage is not None:
        body["usage"] = usage
    return body


def _anthropic_events(request: dict[str, Any], step: dict[str, Any], prompt: int) -> Iterator[tuple[str | None, Any]]:
    body = _anthropic_body(request, step, prompt)
    usage = body.pop("usage", None)
    start = {**body, "content": [], "stop_reason": None}
    if usage is not None:
        start["usage"] = {key: value for key, value in usage.items() if key != "output_tokens"}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(body["content"]):
        kind = block["type"]
        empty = {
            "text": {"type": "text", "text": ""},
            "thinking": {"type": "thinking", "thinking": "", "signature": ""},
            "tool_use": {"type": "tool_use", "id": block.get("id"), "name": block.get("name"), "input": {}},
        }[kind]
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": empty}
        if kind == "text":
            deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"])]
        elif kind == "thinking":
            deltas = [{"type": "thinking_delta", "thinking": piece} for piece in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        else:
            deltas = [
                {"type": "input_json_delta", "partial_json": p} for p in _pieces(orjson.dumps(block["input"]).decode())
            ]
        for delta in deltas:
            yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    final: dict[str, Any] = {
        "type": "message_delta",
        "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
    }
    if usage is not None and "output_tokens" in usage:
        final["usage"] = {"output_tokens": usage["output_tokens"]}
    yield "message_delta", final
    yield "message_stop", {"type": "message_stop"}


# --- command line -------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """``python -m i_core.scripted --script FILE.json [--port N] [--context-window N [--context-style S]]``:
    print the base URL, serve until killed."""
    parser = argparse.ArgumentParser(prog="python -m i_core.scripted", description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True, help="JSON file: a list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--record", help="append every request (redacted headers, JSON body) to this NDJSON file")
    parser.add_argument("--context-window", type=int, help="refuse requests that do not fit N tokens (HTTP 400)")
    parser.add_argument(
        "--context-style", choices=CONTEXT_STYLES, help="whose error bodies and capacity endpoints to imitate"
    )
    args = parser.parse_args(argv)
    if args.context_window is not None and args.context_window < 1:
        parser.error("--context-window must be a positive number of tokens")
    try:
        steps = load_script(args.script)
    except (OSError, orjson.JSONDecodeError, ScriptError) as exc:
        print(f"scripted model: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    record = None
    if args.record:
        record_path = Path(args.record)

        def record(request: RecordedRequest) -> None:
            line = {"path": request.path, "headers": request.headers, "body": request.body}
            with record_path.open("ab") as handle:
                handle.write(orjson.dumps(line) + b"\n")

    model = ScriptedModel(
        steps,
        host=args.host,
        port=args.port,
        on_request=record,
        context_window=args.context_window,
        context_style=args.context_style,
    )
    print(model.base_url, flush=True)
    print(f"scripted model: openai base_url {model.base_url}, anthropic base_url {model.root_url}", file=sys.stderr)
    if args.context_window is not None:
        style = args.context_style or "the protocol's own"
        print(f"scripted model: context window {args.context_window} tokens, {style} error bodies", file=sys.stderr)
    try:
        model._server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        model._stopping.set()
        model._server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
