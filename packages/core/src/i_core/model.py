"""One model request with its hooks: ``before_request`` -> HTTP (``request_retry``) -> ``after_response``.

Hooks may change the request body but never its origin; ``request_meta`` travels from
``before_request`` to ``request_retry`` and ``after_response`` and is never sent to the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .config import ApiConfig
from .hook_results import RequestChange
from .hooks import HookRunner
from .providers import ModelReply, get_adapter
from .transport import Transport


class ModelClient:
    """Talks to the configured model through the adapter of its protocol."""

    def __init__(self, config: ApiConfig, hooks: HookRunner, *, stream: bool | None = None) -> None:
        self.config = config
        self.hooks = hooks
        self.adapter = get_adapter(config.protocol)
        self.stream = config.stream if stream is None else stream
        self.transport = Transport(timeout=config.timeout, retries=config.retries)
        self.requests = 0
        self.retries = 0
        self.last_usage: dict[str, Any] | None = None

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.transport.close()

    def complete(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
    ) -> ModelReply:
        """Send ``history`` (and tool schemas) and return the parsed reply."""
        url = self.adapter.url(self.config.base_url)
        body = self.adapter.build_body(
            model=self.config.model,
            history=history,
            tools=tools,
            max_tokens=max_tokens or self.config.max_tokens,
            use_max_tokens=self.config.use_max_tokens,
            stream=self.stream,
            extra_body=self.config.extra_body,
        )
        prepared: RequestChange = self.hooks.checked(
            "before_request",
            {
                "url": url,
                "body": body,
                "protocol": self.config.protocol,
                "model": self.config.model,
                "budget": self.config.budget,
                "request_meta": {"request": self.requests + 1},
            },
        )
        url, body, meta = prepared.url, prepared.body, prepared.meta
        headers = self.adapter.headers(self.config.api_key())

        def on_retry(attempt: int, reason: str) -> None:
            self.retries += 1
            self.hooks.run(
                "request_retry",
                {"request_meta": meta, "attempt": attempt, "reason": reason, "protocol": self.config.protocol},
            )

        def on_raw(response: dict[str, Any]) -> None:
            # Observers see the provider's answer before the adapter validates it (seed 001 §6), so
            # usage is recorded even for a reply the adapter then rejects.
            self.hooks.run(
                "after_response",
                {
                    "response": response,
                    "request_meta": meta,
                    "protocol": self.config.protocol,
                    "model": self.config.model,
                },
            )

        self.requests += 1
        from .providers import exchange

        reply = exchange(
            self.adapter, self.transport, url, body, headers, on_retry=on_retry, on_text=on_text, on_raw=on_raw
        )
        self.last_usage = reply.usage
        return reply
