"""One model request with its hooks: ``before_request`` -> HTTP (``request_retry``) -> ``after_response``.

Hooks may change the request body but never its origin; ``request_meta`` travels from
``before_request`` to ``request_retry`` and ``after_response`` and is never sent to the model.
With a provider worker bound (``providers/worker.py``) the exchange is one ``provider_request``
through the pool instead of HTTP, never the built-in adapter, and never streamed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any, Protocol

from .call_ids import history_call_ids, unique_call_ids
from .hook_results import RequestChange
from .hooks import HookRunner
from .providers import Adapter, ModelReply, exchange, get_adapter
from .providers.worker import provider_body, provider_exchange
from .selection import bound_provider, check_protocol
from .settings import ApiConfig
from .transport import Transport
from .unplanned_images import leave_out


class ReplyObserver(Protocol):
    """What watches a client's requests (``ModelClient.observe``): the console's answer writer and
    its usage meter, instead of a wrapper around ``complete``."""

    def request_started(self) -> None:
        """A request is about to be built and sent (its text, if streamed, is a new run)."""

    def reply_received(self, reply: ModelReply) -> None:
        """A request's parsed reply, usage included, before ``complete`` returns it."""


class ModelClient:
    """Talks to the configured model through the adapter of its protocol."""

    def __init__(
        self, config: ApiConfig, hooks: HookRunner, *, stream: bool | None = None, cancellable: bool = False
    ) -> None:
        self.config = config
        self.hooks = hooks
        check_protocol(config, hooks.manifest)
        self.provider = bound_provider(config, hooks.manifest)
        self.adapter: Adapter | None = None if self.provider is not None else get_adapter(config.protocol)
        # No streaming through a provider in this version: the console prints the whole answer.
        self.stream = False if self.provider is not None else config.stream if stream is None else stream
        self.transport = Transport(timeout=config.timeout, retries=config.retries, cancellable=cancellable)
        if self.adapter is not None:
            self.transport.prepare(self.adapter.url(config.base_url))
        self.requests = 0
        self.retries = 0
        self.last_usage: dict[str, Any] | None = None
        self.observers: list[ReplyObserver] = []

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self.transport.close()

    def cancel(self) -> None:
        """From another thread (a ``cancellable`` client): the request in flight raises ``Cancelled``
        at once, its connection shut down, and so does every later one; nothing is retried."""
        self.transport.cancel()

    def observe(self, observer: ReplyObserver) -> None:
        """Tell ``observer`` of every request this client sends and every reply it returns, from now on."""
        self.observers.append(observer)

    def complete(
        self,
        history: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        on_text: Callable[[str], None] | None = None,
        max_tokens: int | None = None,
        archived_ids: Collection[str] = frozenset(),
        meta: dict[str, Any] | None = None,
    ) -> ModelReply:
        """Send ``history`` (and tool schemas) and return the parsed reply.

        A reply's tool call whose id is in ``history`` or ``archived_ids`` (the archive's calls) is
        renamed (``call_ids``). ``meta`` goes into ``request_meta`` (a summary request's ``kind`` and
        session, for the cache module's counts).

        While a budget runs, images with no planned cost are left out (``unplanned_images``): a note
        takes their place. Each observer (``observe``) is told first that a request starts, then of
        the reply (not of a request that failed).
        """
        for observer in self.observers:
            observer.request_started()
        if self.hooks.has("context_budget"):  # a budget runs: an image it cannot plan is not sent
            history = leave_out(history, self.config.budget)[0]
        url, body = self._body(history, tools, max_tokens or self.config.max_tokens)
        prepared: RequestChange = self.hooks.checked(
            "before_request",
            {
                "url": url,
                "body": body,
                "protocol": self.config.protocol,
                "model": self.config.model,
                "budget": self.config.budget,
                "request_meta": {**(meta or {}), "request": self.requests + 1},
            },
        )
        self.requests += 1
        reply = self._exchange(prepared.url, prepared.body, prepared.meta, on_text)
        # A service that numbers each response's calls from call_0 must not leave two calls of one id,
        # in the history or in the archive that ``recall`` reads by id.
        unique_call_ids(reply.message, history_call_ids(history), archived_ids)
        self.last_usage = reply.usage
        for observer in self.observers:
            observer.reply_received(reply)
        return reply

    def _body(self, history: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int) -> tuple[str, Any]:
        """The URL and the body of a request, before the ``before_request`` hooks."""
        if self.adapter is None:
            body = provider_body(
                model=self.config.model,
                history=history,
                tools=tools,
                max_tokens=max_tokens,
                extra_body=self.config.extra_body,
            )
            return self.config.base_url, body
        body = self.adapter.build_body(
            model=self.config.model,
            history=history,
            tools=tools,
            max_tokens=max_tokens,
            use_max_tokens=self.config.use_max_tokens,
            stream=self.stream,
            extra_body=self.config.extra_body,
        )
        return self.adapter.url(self.config.base_url), body

    def _exchange(self, url: str, body: Any, meta: dict[str, Any], on_text: Callable[[str], None] | None) -> ModelReply:
        """One request over HTTP (the adapter) or through the bound provider worker, with its
        ``request_retry`` and ``after_response`` hooks."""

        def on_retry(attempt: int, reason: str) -> None:
            self.retries += 1
            self.hooks.run(
                "request_retry",
                {"request_meta": meta, "attempt": attempt, "reason": reason, "protocol": self.config.protocol},
            )

        def on_raw(response: dict[str, Any]) -> dict[str, Any]:
            # Observers see the provider's answer before the adapter validates it (seed 001 §6), so
            # usage is recorded even for a reply the adapter then rejects. For ``responses`` the
            # chain's answer is the reply: the responses module converts it last.
            return self.hooks.run(
                "after_response",
                {
                    "response": response,
                    "request_meta": meta,
                    "protocol": self.config.protocol,
                    "model": self.config.model,
                },
            )

        if self.adapter is None:
            assert self.provider is not None
            request = {
                "url": url,
                "body": body,
                "protocol": self.config.protocol,
                "model": self.config.model,
                "timeout": self.config.timeout,
                "request_meta": meta,
            }
            return provider_exchange(
                self.hooks.pool,
                self.provider,
                self.hooks.context,
                request,
                timeout=self.config.timeout,
                on_retry=on_retry,
                on_raw=on_raw,
            )
        return exchange(
            self.adapter,
            self.transport,
            url,
            body,
            self.adapter.headers(self.config.api_key()),
            on_retry=on_retry,
            on_text=on_text,
            on_raw=on_raw,
            omit=self.config.omit_fields,
        )
