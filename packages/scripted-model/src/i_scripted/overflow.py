"""The HTTP 400 bodies real servers send when a request does not fit their context window.

A request whose prompt, or prompt + requested output (``max_completion_tokens``/``max_tokens``),
does not fit is refused before any generation, with the body of the server being imitated:

- ``openai``: prompt > N, or prompt + max_tokens (0 when absent) > N; ``context_length_exceeded``.
- ``anthropic``: prompt > N ("prompt is too long"), or prompt + max_tokens > N.
- ``llamacpp``: prompt >= N only (llama-server checks the prompt alone; a too-large ``max_tokens``
  is accepted and would stop at the context end); ``exceed_context_size_error`` with the counts.
- ``vllm``: prompt >= N, or prompt + max_tokens > N when max_tokens is given (vLLM's current
  ``BadRequestError`` messages).
- ``responses`` (OpenAI Responses API): prompt > N, or prompt + max_output_tokens > N;
  ``context_length_exceeded`` with ``param: "input"`` and OpenAI's wording, which gives no counts.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

CONTEXT_STYLES = ("openai", "anthropic", "llamacpp", "vllm", "responses")


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


def _responses_overflow(window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    if prompt + (output or 0) <= window:
        return None
    return {
        "error": {
            "message": "Your input exceeds the context window of this model. Please adjust your input and try again.",
            "type": "invalid_request_error",
            "param": "input",
            "code": "context_length_exceeded",
        }
    }


_OVERFLOW: dict[str, Callable[[int, int, int | None], dict[str, Any] | None]] = {
    "openai": _openai_overflow,
    "anthropic": _anthropic_overflow,
    "llamacpp": _llamacpp_overflow,
    "vllm": _vllm_overflow,
    "responses": _responses_overflow,
}


def context_error(style: str, window: int, prompt: int, output: int | None) -> dict[str, Any] | None:
    """The HTTP 400 body a ``style`` server sends for ``prompt`` (+ ``output``) tokens in ``window``,
    or None when the request fits."""
    return _OVERFLOW[style](window, prompt, output)
