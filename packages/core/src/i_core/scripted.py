"""A scripted OpenAI- and Anthropic-compatible model server on loopback, for tests and demos.

OpenAI Chat Completions is served at ``/v1/chat/completions`` (``base_url`` = ``http://HOST:PORT/v1``)
and Anthropic Messages at ``/v1/messages`` (``root_url`` = ``http://HOST:PORT``, because the
anthropic adapter appends ``/v1/messages`` itself). Each request consumes the next script step.
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

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


class ScriptedModel:
    """The scripted server; use as a context manager or call start()/stop()."""

    def __init__(
        self,
        script: list[Step],
        host: str = "127.0.0.1",
        port: int = 0,
        on_request: Callable[[RecordedRequest], None] | None = None,
    ) -> None:
        for index, step in enumerate(script):
            check_step(step, f"step {index}")
        self.script = list(script)
        self.requests: list[RecordedRequest] = []
        self.served = 0
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
        self._send_json(404, {"error": {"message": "scripted model: only POST is served", "type": "not_found"}})

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
        try:
            step = self.scripted._next_step(body)
        except Exception as exc:  # a broken callable must show up in the test, not hang it
            self._send_error(kind, 500, f"scripted model: step failed: {exc}", "api_error")
            return
        if step is None:
            count = self.scripted.served
            self._send_error(kind, 500, f"scripted model: script exhausted after {count} requests", "api_error")
            return
        self._answer(kind, body, step, len(raw))

    def _answer(self, kind: str, request: dict[str, Any], step: dict[str, Any], request_bytes: int) -> None:
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
            events = _openai_chunks if kind == "openai" else _anthropic_events
            self._send_sse(events(request, step, request_bytes), extra)
        else:
            build = _openai_body if kind == "openai" else _anthropic_body
            self._send_json(200, build(request, step, request_bytes), extra)

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


def _openai_usage(step: dict[str, Any], request_bytes: int, output: int) -> dict[str, Any] | None:
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    prompt = max(1, request_bytes // 4)
    completion = max(1, output // 4)
    # The stand-in has no prompt cache, and says so the way OpenAI does: zero cached tokens.
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": 0}}


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


def _openai_body(request: dict[str, Any], step: dict[str, Any], request_bytes: int) -> dict[str, Any]:
    serial = len(request.get("messages") or [])
    message = _openai_message(request, step, serial)
    body: dict[str, Any] = {
        "id": f"chatcmpl-scripted-{serial}",
        "object": "chat.completion",
        "created": 0,
        "model": request.get("model"),
        "choices": [{"index": 0, "message": message, "finish_reason": _openai_finish(step)}],
    }
    usage = _openai_usage(step, request_bytes, len(orjson.dumps(message)))
    if usage is not None:
        body["usage"] = usage
    return body


def _openai_chunks(
    request: dict[str, Any], step: dict[str, Any], request_bytes: int
) -> Iterator[tuple[str | None, Any]]:
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
    usage = _openai_usage(step, request_bytes, len(orjson.dumps(message)))
    if usage is not None and (request.get("stream_options") or {}).get("include_usage"):
        yield None, {**base, "choices": [], "usage": usage}
    yield None, "[DONE]"


def _anthropic_usage(step: dict[str, Any], request_bytes: int, output: int) -> dict[str, Any] | None:
    usage = step.get("usage")
    if usage == "omit":
        return None
    if isinstance(usage, dict):
        return usage
    return {
        "input_tokens": max(1, request_bytes // 4),
        "output_tokens": max(1, output // 4),
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


def _anthropic_body(request: dict[str, Any], step: dict[str, Any], request_bytes: int) -> dict[str, Any]:
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
    usage = _anthropic_usage(step, request_bytes, len(orjson.dumps(blocks)))
    if usage is not None:
        body["usage"] = usage
    return body


def _anthropic_events(
    request: dict[str, Any], step: dict[str, Any], request_bytes: int
) -> Iterator[tuple[str | None, Any]]:
    body = _anthropic_body(request, step, request_bytes)
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
    """``python -m i_core.scripted --script FILE.json [--port N]``: print the base URL, serve until killed."""
    parser = argparse.ArgumentParser(prog="python -m i_core.scripted", description=__doc__.splitlines()[0])
    parser.add_argument("--script", required=True, help="JSON file: a list of steps")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--record", help="append every request (redacted headers, JSON body) to this NDJSON file")
    args = parser.parse_args(argv)
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

    model = ScriptedModel(steps, host=args.host, port=args.port, on_request=record)
    print(model.base_url, flush=True)
    print(f"scripted model: openai base_url {model.base_url}, anthropic base_url {model.root_url}", file=sys.stderr)
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
