"""The token-counting endpoints of the imitated servers: llama.cpp and vLLM count a request exactly.

- llama.cpp (``context_style="llamacpp"``): ``POST /apply-template`` takes a chat-completions body
  (``messages``, ``tools``) and answers ``{"prompt": TEXT}``, the request rendered by the chat
  template; ``POST /tokenize`` takes ``{"content": TEXT}`` and answers ``{"tokens": [...]}``. Both at
  the server root, not under ``/v1``. The tokens of a prompt this server rendered are exactly the
  ``prompt_tokens`` a chat request of that body reports (``tokens.prompt_tokens``); any other text
  is counted by ``reference_tokens``.
- vLLM (``context_style="vllm"``): ``POST /tokenize`` with ``messages`` (and ``tools``) answers
  ``{"count", "max_model_len", "tokens"}`` for the chat request; with ``prompt`` the text's count.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

import orjson

from i_scripted.tokens import prompt_tokens, reference_tokens

COUNT_PATHS = ("/apply-template", "/tokenize")
_KEPT_PROMPTS = 256


class Counting:
    """What one server rendered (bounded), so ``/tokenize`` counts a rendered prompt exactly."""

    def __init__(self) -> None:
        self._prompts: OrderedDict[str, int] = OrderedDict()
        self._lock = threading.Lock()

    def answer(self, style: str | None, path: str, body: Any, window: int | None) -> tuple[int, dict[str, Any]]:
        """(status, JSON answer) of ``POST path`` for an imitated server of ``style``."""
        if style not in ("llamacpp", "vllm") or (style == "vllm" and path != "/tokenize"):
            return 404, {"error": {"message": f"scripted model: nothing is served at {path}", "type": "not_found"}}
        if not isinstance(body, dict):
            return 400, {"error": {"message": "request body is not a JSON object", "type": "invalid_request_error"}}
        if style == "vllm":
            return 200, self._vllm(body, window)
        if path == "/apply-template":
            if not isinstance(body.get("messages"), list):
                return 400, {"error": {"message": "'messages' is required", "type": "invalid_request_error"}}
            return 200, {"prompt": self._render(body)}
        content = body.get("content")
        if not isinstance(content, str):
            return 400, {"error": {"message": "'content' must be a string", "type": "invalid_request_error"}}
        with self._lock:
            count = self._prompts.get(content)
        return 200, {"tokens": list(range(reference_tokens(content) if count is None else count))}

    def _render(self, body: dict[str, Any]) -> str:
        """A ChatML-like rendering of the request; its count is the chat request's prompt_tokens."""
        lines = [f"<|tools|>{orjson.dumps(body['tools']).decode()}"] if body.get("tools") else []
        for message in body["messages"]:
            message = message if isinstance(message, dict) else {"role": "?", "content": message}
            lines.append(f"<|im_start|>{message.get('role')}\n{orjson.dumps(message.get('content')).decode()}")
            if message.get("tool_calls"):
                lines.append(orjson.dumps(message["tool_calls"]).decode())
        prompt = "\n".join(lines) + "\n<|im_start|>assistant\n"
        with self._lock:
            self._prompts[prompt] = prompt_tokens("openai", body)
            self._prompts.move_to_end(prompt)
            while len(self._prompts) > _KEPT_PROMPTS:
                self._prompts.popitem(last=False)
        return prompt

    @staticmethod
    def _vllm(body: dict[str, Any], window: int | None) -> dict[str, Any]:
        if isinstance(body.get("messages"), list):
            count = prompt_tokens("openai", body)
        else:
            prompt = body.get("prompt")
            count = reference_tokens(prompt) if isinstance(prompt, str) else 0
        return {"count": count, "max_model_len": window, "tokens": list(range(count))}
