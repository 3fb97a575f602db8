"""One place that recognises a model server's "context too long" refusal, for every protocol.

The transport asks it about every HTTP error response; the adapters ask it about an error sent
inside a 200 body or a stream. What it recognises (numbers are read defensively: a count the
server did not give is None, never guessed):

- OpenAI: ``error.code == "context_length_exceeded"``, "This model's maximum context length is N
  tokens. However, your messages resulted in M tokens" (or "you requested T tokens (M in the
  messages, K in the completion)").
- Anthropic: ``invalid_request_error`` "prompt is too long: M tokens > N maximum", and "input
  length and `max_tokens` exceed context limit: M + K > N".
- llama.cpp server: ``error.type == "exceed_context_size_error"`` with ``n_prompt_tokens`` and
  ``n_ctx`` ("...exceeds the available context size..."; counts missing from the fields are read
  from a text "request (M tokens) exceeds the available context size (N tokens)").
- Any other server (vLLM, DeepSeek, OpenRouter, ...) by its text alone: "maximum context length
  is N tokens" (M from "resulted in M tokens", "(M in the messages", "request has M input
  tokens"), and vLLM's "prompt (length M) is longer than the maximum model length of N".

A 429 or 5xx is never a context rejection (those are rate limits and outages, worth a retry).
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from ..errors import ContextTooLong
from .reply import count

_NUMBER = r"(\d[\d,]*)"
_MAX_CONTEXT = re.compile(rf"maximum context length is {_NUMBER} tokens", re.IGNORECASE)
_INPUT = (
    re.compile(rf"resulted in {_NUMBER} tokens", re.IGNORECASE),
    re.compile(rf"\({_NUMBER} in the messages", re.IGNORECASE),
    re.compile(rf"request has {_NUMBER} input tokens", re.IGNORECASE),
)
_ANTHROPIC = re.compile(r"prompt is too long", re.IGNORECASE)
_ANTHROPIC_COUNTS = re.compile(rf"{_NUMBER} tokens > {_NUMBER}", re.IGNORECASE)
_ANTHROPIC_WITH_OUTPUT = re.compile(
    rf"input length and `?max_tokens`? exceed context limit: {_NUMBER} \+ {_NUMBER} > {_NUMBER}", re.IGNORECASE
)
_LLAMA_CPP = re.compile(r"exceeds the available context size", re.IGNORECASE)
_LLAMA_CPP_COUNTS = re.compile(
    rf"\({_NUMBER} tokens\) exceeds the available context size \({_NUMBER} tokens\)", re.IGNORECASE
)
_VLLM_MODEL_LEN = re.compile(
    rf"prompt \(length {_NUMBER}\) is longer than the maximum model length of {_NUMBER}", re.IGNORECASE
)


def context_rejection(status: int | None, body: Any) -> ContextTooLong | None:
    """The ContextTooLong that an error response means, or None when it is about something else.

    ``status`` is the HTTP status (None for an error inside a 200 body or a stream event);
    ``body`` the decoded JSON body, or its raw bytes/text (decoded here; text that is not JSON
    is read as the message itself).
    """
    if status is not None and not (400 <= status < 500 and status != 429):
        return None
    error, message = _error_of(_decoded(body))
    if error is None:
        return None
    code = error.get("code")
    if status is None and isinstance(code, int) and not isinstance(code, bool) and (code == 429 or code >= 500):
        return None  # an in-band rate limit or outage (OpenRouter sends those inside a stream)
    text = message or ""

    def found(input_tokens: int | None, limit: int | None) -> ContextTooLong:
        return ContextTooLong(input_tokens=input_tokens, limit=limit, provider_message=message, status=status)

    if error.get("type") == "exceed_context_size_error" or _LLAMA_CPP.search(text):
        counts = _LLAMA_CPP_COUNTS.search(text)
        prompt, n_ctx = count(error.get("n_prompt_tokens")), count(error.get("n_ctx"))
        return found(_number(counts, 1) if prompt is None else prompt, _number(counts, 2) if n_ctx is None else n_ctx)
    limit_match = _MAX_CONTEXT.search(text)
    if code == "context_length_exceeded" or limit_match:
        input_match = next((m for pattern in _INPUT if (m := pattern.search(text))), None)
        return found(_number(input_match, 1), _number(limit_match, 1))
    if with_output := _ANTHROPIC_WITH_OUTPUT.search(text):
        return found(_number(with_output, 1), _number(with_output, 3))
    if _ANTHROPIC.search(text):
        counts = _ANTHROPIC_COUNTS.search(text)
        return found(_number(counts, 1), _number(counts, 2))
    if vllm := _VLLM_MODEL_LEN.search(text):
        return found(_number(vllm, 1), _number(vllm, 2))
    return None


def _decoded(body: Any) -> Any:
    if isinstance(body, bytes | bytearray | memoryview | str):
        raw = bytes(body) if not isinstance(body, str) else body.encode("utf-8", "replace")
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw.decode("utf-8", "replace")
    return body


def _error_of(body: Any) -> tuple[dict[str, Any] | None, str | None]:
    """(the error object, its message) of an OpenAI/Anthropic/llama.cpp/vLLM error body."""
    if isinstance(body, str):
        return ({}, body) if body.strip() else (None, None)
    if not isinstance(body, dict):
        return None, None
    error = body.get("error")
    if isinstance(error, dict):
        message = error.get("message")
        return error, message if isinstance(message, str) else None
    if isinstance(error, str):
        return {}, error
    if isinstance(body.get("message"), str):  # vLLM: {"object": "error", "message": ..., "code": 400}
        return body, body["message"]
    return None, None


def _number(match: re.Match[str] | None, group: int) -> int | None:
    if match is None:
        return None
    try:
        return int(match.group(group).replace(",", ""))
    except (IndexError, ValueError):
        return None
