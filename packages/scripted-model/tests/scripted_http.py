"""Raw HTTP to the scripted server: exact status and body bytes, nothing interpreted.

Stdlib only, so that these tests need no HTTP client (and no i package) besides the server's own.
"""

from __future__ import annotations

import http.client
from typing import Any
from urllib.parse import urlsplit

import orjson

from i_protocol.testing import scaled
from i_scripted import ScriptedModel

ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "sk-a"}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
PROSE = (
    "The library was quiet in the late afternoon, and the light came in low through the tall windows. "
    "Most of the readers had already gone home, but a few students were still bent over their notes, "
    "trying to finish the chapter before the doors closed. Nobody spoke; the only sound was the slow "
    "turning of pages and, now and then, the soft scrape of a chair. When the bell finally rang, they "
    "gathered their books, thanked the librarian on the way out, and walked together into the evening, "
    "talking about the examination that was waiting for them at the end of the week. "
)


def _connection(root_url: str) -> http.client.HTTPConnection:
    address = urlsplit(root_url)
    return http.client.HTTPConnection(address.hostname or "127.0.0.1", address.port, timeout=scaled(10))


def post(root_url: str, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One raw POST: the exact status and body bytes, nothing interpreted."""
    connection = _connection(root_url)
    try:
        connection.request("POST", path, orjson.dumps(body), {"content-type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def get(model: ScriptedModel, path: str) -> tuple[int, Any]:
    """One GET with a secret header (which the server must redact): status and JSON body."""
    connection = _connection(model.root_url)
    try:
        connection.request("GET", path, headers={"authorization": "Bearer sk-probe"})
        response = connection.getresponse()
        return response.status, orjson.loads(response.read())
    finally:
        connection.close()


def chat(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    """A minimal valid request of ``kind`` with one user message."""
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    if kind == "anthropic":
        body.setdefault("max_tokens", 16)
    return body


def send(model: ScriptedModel, kind: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """POST ``body`` to ``kind``'s endpoint with the headers that wire needs."""
    return post(model.root_url, PATHS[kind], body, ANTHROPIC_HEADERS if kind == "anthropic" else None)


def error_message(kind: str, raw: bytes) -> str:
    """The message of an error body, read the way each provider shapes it (a wrong shape fails here)."""
    body = orjson.loads(raw)
    if kind == "anthropic":
        assert body["type"] == "error"
    return str(body["error"]["message"])


def sse_events(raw: bytes) -> list[Any]:
    """The JSON data of each SSE event (without OpenAI's ``[DONE]``)."""
    return [
        orjson.loads(line[6:]) for line in raw.splitlines() if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]
