"""Who watches the model client (``ModelClient.observe``): told of every request it starts and of
every reply it returns, usage included, against the scripted model over loopback HTTP. The console
counts usage this way; nothing replaces ``complete``."""

from __future__ import annotations

from pathlib import Path

import pytest

from i_core.errors import TransportError
from i_core.hooks import HookRunner
from i_core.manifest import parse_manifest
from i_core.model import ModelClient
from i_core.pool import WorkerPool
from i_core.settings import parse_api_config
from i_protocol import paths_from_env
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

HISTORY = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"}]


class Seen:
    """An observer that writes down what it is told."""

    def __init__(self) -> None:
        self.events: list[tuple[str, object]] = []

    def request_started(self) -> None:
        self.events.append(("started", None))

    def reply_received(self, reply) -> None:
        self.events.append(("reply", reply.usage))


def _client(tmp_path: Path, base_url: str) -> tuple[ModelClient, WorkerPool]:
    config = {"protocol": "openai", "base_url": base_url, "model": "m", "retries": 0, "timeout": scaled(10)}
    api = parse_api_config({**config, "stream": False}, str(tmp_path / "config.json"))
    pool = WorkerPool(paths_from_env())
    hooks = HookRunner(parse_manifest({}, tmp_path, "manifest.json"), pool, {"workspace": str(tmp_path)})
    return ModelClient(api, hooks), pool


def test_every_observer_is_told_of_each_request_and_of_its_reply_with_the_usage(dirs, tmp_path) -> None:
    usage = [{"prompt_tokens": 11, "completion_tokens": 2}, {"prompt_tokens": 30, "completion_tokens": 4}]
    with ScriptedModel([{"text": "one", "usage": usage[0]}, {"text": "two", "usage": usage[1]}]) as server:
        model, pool = _client(tmp_path, server.base_url)
        first, second = Seen(), Seen()
        model.observe(first)
        model.observe(second)
        try:
            model.complete(HISTORY, [])
            model.complete(HISTORY, [])
        finally:
            model.close()
            pool.close()
    assert first.events == second.events
    assert [kind for kind, _ in first.events] == ["started", "reply", "started", "reply"]
    replies = [seen for kind, seen in first.events if kind == "reply"]
    assert [(u["input_tokens"], u["output_tokens"]) for u in replies] == [(11, 2), (30, 4)]  # type: ignore[index]
    assert type(model).complete is ModelClient.complete and "complete" not in vars(model)


def test_a_request_that_fails_is_started_but_never_replied(dirs, tmp_path) -> None:
    with ScriptedModel([{"status": 400, "error_message": "bad request"}]) as server:
        model, pool = _client(tmp_path, server.base_url)
        seen = Seen()
        model.observe(seen)
        try:
            with pytest.raises(TransportError):
                model.complete(HISTORY, [])
        finally:
            model.close()
            pool.close()
    assert seen.events == [("started", None)]
