"""Tokens counted from the content, never from the byte length, so a test sees real density.

- ``reference_tokens(text)`` splits ``text`` GPT-2 style with ``_SPLIT``: an optional leading space
  plus an ASCII letter run, an optional space plus 1-3 digits, one non-ASCII character, an optional
  space plus one ASCII punctuation/control character, or a whitespace run. Every piece is one token,
  except a letter run of L letters, which costs ceil(L / 7). Examples: ``"Hello world."`` = 3,
  ``"internationalization"`` = 3, ``"12345"`` = 2, ``"中文!"`` = 3, ``'{"id": 7}'`` = 7.
  Measured densities: plain English prose (the GPL-3 and Apache-2.0 texts) 4.3-4.6 bytes/token,
  technical Markdown (README.md, SPEC.md) ~3.4; Python code ~3.1; id-dense JSON
  (uuids, hex shas, call ids, paths, numbers) 1.7-1.9; Chinese 3.0 for Han text and punctuation
  (3 UTF-8 bytes a character, one token each), ~2.7 mixed with ASCII (gettext catalogs). Real
  BPE tokenizers show the same shape; this is not any provider's tokenizer.
- ``prompt_tokens(kind, body)`` frames a request like a chat template: 3, plus for each message
  4 + its content (a string, or the sum of its parts: text = its tokens, an image = 85, an
  Anthropic ``tool_use`` = 3 + name + JSON of its input, ``tool_result`` = its content,
  ``thinking`` = its text, any other part = the tokens of its JSON), plus for each OpenAI tool
  call 3 + name + arguments, plus for each tool schema 8 + the tokens of its compact JSON (the
  ``function`` object for OpenAI tools, the tool object for Anthropic; ``cache_control`` dropped).
  An Anthropic ``system`` counts as one more message (4 + its text). A Responses request
  (``responses``) frames the same way: ``instructions`` is one more message, each ``input`` item
  a message (4 + its content; a ``function_call_output`` 4 + its output; a ``function_call`` 3 +
  name + arguments; a replayed ``reasoning`` item the tokens of its summary text and encrypted
  content), each flat function tool 8 + its compact JSON.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

IMAGE_TOKENS = 85
_IMAGE_PARTS = frozenset({"image_url", "image", "input_image"})
# Linear time: every alternative is a single character class or a run of one, no nesting.
_SPLIT = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}|[^\x00-\x7f]| ?[^\sA-Za-z0-9\x80-\U0010ffff]|\s+")


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
    if kind in ("text", "input_text", "output_text"):
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


def _responses_item_tokens(item: Any) -> int:
    """Tokens of one Responses input item (a bare string is a user message)."""
    if not isinstance(item, dict):
        return 4 + _content_tokens(item)
    kind = item.get("type", "message")
    if kind == "function_call":
        return 3 + _string_tokens(item.get("name") or "") + _string_tokens(item.get("arguments") or "")
    if kind == "function_call_output":
        return 4 + _content_tokens(item.get("output"))
    if kind == "reasoning":
        summary = sum(_string_tokens(part.get("text") or "") for part in item.get("summary") or [])
        return summary + _string_tokens(item.get("encrypted_content") or "")
    if kind == "message":
        return 4 + _content_tokens(item.get("content"))
    return _json_tokens(item)


def prompt_tokens(kind: str, body: dict[str, Any]) -> int:
    """Input tokens of a wire request ``body`` of ``kind`` (``openai``, ``anthropic`` or ``responses``),
    framed like a chat template: 3 + per message (4 + content + tool calls) + per tool schema (8 + its JSON)."""
    if kind not in ("openai", "anthropic", "responses"):
        raise ValueError(f"prompt_tokens: kind must be openai, anthropic or responses, not {kind!r}")
    total = 3
    messages = body.get("messages") or []
    if kind == "responses":
        raw = body.get("input")
        items = [raw] if isinstance(raw, str) else raw if isinstance(raw, list) else []
        if body.get("instructions"):
            total += 4 + _content_tokens(body["instructions"])
        total += sum(_responses_item_tokens(item) for item in items)
    elif kind == "openai":
        total += sum(_openai_message_tokens(message) for message in messages)
    else:
        if body.get("system"):
            total += 4 + _content_tokens(body["system"])
        total += sum(4 + _content_tokens(m.get("content") if isinstance(m, dict) else m) for m in messages)
    return total + sum(_schema_tokens(tool) for tool in body.get("tools") or [])


def requested_output_tokens(body: dict[str, Any]) -> int | None:
    """The output the request reserves: ``max_output_tokens`` (Responses), ``max_completion_tokens``,
    else ``max_tokens``; None when absent."""
    for key in ("max_output_tokens", "max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None
