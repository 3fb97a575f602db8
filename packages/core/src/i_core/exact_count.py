"""The model server's own count of a request (SPEC §5; ``budget.exact_count: "tokenize"``).

The core owns the endpoint, so it may ask the same origin how many tokens the next request is:
llama.cpp renders it with ``POST <root>/apply-template`` and counts the prompt with ``POST
<root>/tokenize`` (``add_special`` and ``parse_special``, as its chat endpoint tokenizes); vLLM
counts a chat request with ``POST <root>/tokenize`` and ``messages``. ``<root>`` is ``base_url``
without its ``/v1``. The count is measured by the server, never by a local tokenizer; it reaches
only a budget worker that declared the ``exact_count`` extension, as
``exact_count: {tokens, origin, model, tools_fingerprint}``. A server that cannot count is said
once and not asked again in this process: the budget estimates as before.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import orjson

from .settings import ApiConfig

MODES = ("off", "tokenize")
COUNT_TIMEOUT = 10.0
"""Seconds for one counting exchange; a server slower than this to count is not asked again."""
_MAX_ANSWER_BYTES = 64 * 1024 * 1024
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})
_CHAT_PROTOCOLS = ("openai", "deepseek")


def tools_fingerprint(tools: list[dict[str, Any]]) -> str:
    """``"sha256:"`` + SHA-256 of the tool schemas' compact JSON with sorted keys (the budget
    worker's ``tools_fingerprint``), so a count is never taken for another set of tools."""
    return "sha256:" + hashlib.sha256(orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)).hexdigest()


class CountFailed(Exception):
    """The server did not count the request (the message says what it answered)."""


class ExactCounter:
    """Asks the configured chat-completions server for the token count of a request."""

    def __init__(self, config: ApiConfig, warn: Callable[[str], None]) -> None:
        self.config = config
        self.warn = warn
        self.root = config.base_url.rstrip("/").removesuffix("/v1")
        self.style: str | None = None  # "llamacpp" or "vllm", once one answered
        self.off = config.budget.get("exact_count", "off") != "tokenize"
        self.asked = 0
        self.seconds = 0.0
        """Counting exchanges made and the time they took (the latency a bench reports)."""
        self._client: Any = None
        if not self.off and config.protocol not in _CHAT_PROTOCOLS:
            self._give_up(f"it counts chat-completions requests, and this config's protocol is {config.protocol!r}")

    def count(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int | None:
        """The server's token count of the request of ``history`` and ``tools``; None when off or failed."""
        if self.off:
            return None
        import time

        from .providers import get_adapter

        body = get_adapter(self.config.protocol).build_body(
            model=self.config.model,
            history=history,
            tools=tools,
            max_tokens=None,
            use_max_tokens=self.config.use_max_tokens,
            stream=False,
            extra_body=None,
        )
        started = time.perf_counter()
        try:
            return self._count(body)
        except CountFailed as exc:
            self._give_up(str(exc))
            return None
        finally:
            self.asked += 1
            self.seconds += time.perf_counter() - started

    def _count(self, body: dict[str, Any]) -> int:
        if self.style in (None, "llamacpp"):
            status, answer = self._post(
                "/apply-template", {key: body[key] for key in ("messages", "tools") if key in body}
            )
            if status == 200 and isinstance(answer, dict) and isinstance(answer.get("prompt"), str):
                status, counted = self._post(
                    "/tokenize", {"content": answer["prompt"], "add_special": True, "parse_special": True}
                )
                tokens = counted.get("tokens") if isinstance(counted, dict) else None
                if status != 200 or not isinstance(tokens, list):
                    raise CountFailed(f"{self.root}/tokenize answered HTTP {status} without a token list")
                self.style = "llamacpp"
                return len(tokens)
            if self.style == "llamacpp" or status not in (404, 405):
                raise CountFailed(f"{self.root}/apply-template answered HTTP {status} without a prompt")
        status, answer = self._post("/tokenize", body)
        count = answer.get("count") if isinstance(answer, dict) else None
        if status != 200 or isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise CountFailed(
                f"neither llama.cpp's {self.root}/apply-template nor vLLM's {self.root}/tokenize counted the "
                f"request (HTTP {status})"
            )
        self.style = "vllm"
        return count

    def _post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        import httpx

        from i_protocol.jsonsafe import dumps_printable

        from .providers.reply import bearer_headers

        if self._client is None:
            direct = (urlsplit(self.root).hostname or "") in _LOOPBACK
            self._client = httpx.Client(timeout=COUNT_TIMEOUT, follow_redirects=False, trust_env=not direct)
        try:
            response = self._client.post(
                self.root + path, content=dumps_printable(body), headers=bearer_headers(self.config.api_key())
            )
        except httpx.HTTPError as exc:
            raise CountFailed(f"{self.root}{path} failed: {type(exc).__name__}") from None
        if len(response.content) > _MAX_ANSWER_BYTES:
            raise CountFailed(f"{self.root}{path} answered more than {_MAX_ANSWER_BYTES} bytes")
        try:
            return response.status_code, orjson.loads(response.content)
        except orjson.JSONDecodeError:
            return response.status_code, None

    def _give_up(self, why: str) -> None:
        self.off = True
        self.warn(
            f"budget.exact_count is 'tokenize' but the server cannot count this request: {why}; the budget estimates it"
        )

    def close(self) -> None:
        """Close the HTTP connection."""
        if self._client is not None:
            self._client.close()
            self._client = None
