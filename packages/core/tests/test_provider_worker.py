"""The provider path of ModelClient: one ``provider_request`` per model request, through the pool,
with before_request / request_retry / after_response around it, under the request timeout, never
re-sent, never the built-in adapter (real worker processes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from i_core.errors import ConfigError, HookResultError, WorkerFailure
from i_core.hooks import HookRunner
from i_core.manifest import parse_manifest
from i_core.model import ModelClient
from i_core.pool import WorkerPool
from i_core.settings import parse_api_config
from i_protocol import paths_from_env
from i_protocol.testing import scaled

HERE = Path(__file__).parent

# A provider that answers from a JSON script file (one reply per call, in order), logs every
# request it receives and can sleep first; argv: SCRIPT LOG.
PROVIDER = """
import json, sys, time
from i_protocol import Worker
worker = Worker("scripted-provider", "1")
script, log = sys.argv[1], sys.argv[2]

@worker.hook("provider_request")
def provider_request(data, request):
    with open(log, "a") as handle:
        handle.write(json.dumps(data) + "\\n")
    with open(script) as handle:
        steps = json.load(handle)
    step = steps.pop(0)
    with open(script, "w") as handle:
        json.dump(steps, handle)
    time.sleep(step.pop("sleep", 0))
    if "fail" in step:
        raise RuntimeError(step["fail"])
    return step

sys.exit(worker.main([]))
"""

REPLY = {
    "message": {"role": "assistant", "content": "hello from the provider"},
    "finish_reason": "stop",
    "usage": {"input_tokens": 40, "output_tokens": 5},
    "response": {"wire": "custom", "tokens": [40, 5]},
}


@pytest.fixture
def provider(tmp_path: Path):
    """(write the script, read the log, the provider's exec entry)."""
    program = tmp_path / "provider.py"
    program.write_text(PROVIDER)
    script, log = tmp_path / "script.json", tmp_path / "provider.log"

    def steps(*replies: dict[str, Any]) -> None:
        script.write_text(json.dumps(list(replies)))

    def received() -> list[dict[str, Any]]:
        return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []

    return steps, received, {"exec": [sys.executable, str(program), str(script), str(log)]}


def client(
    tmp_path: Path,
    provider_entry: dict[str, Any] | None,
    manifest: dict[str, Any] | None = None,
    *,
    deadline: float = 15.0,
    **config: Any,
):
    raw = {"protocol": "my-wire", "base_url": "http://127.0.0.1:9/v1", "model": "m", "timeout": scaled(5), **config}
    if provider_entry is not None:
        raw["provider"] = provider_entry
    api = parse_api_config(raw, str(tmp_path / "config.json"))
    parsed = parse_manifest(manifest or {}, tmp_path, "manifest.json")
    pool = WorkerPool(paths_from_env(), deadline=deadline)  # the hooks' deadline; the provider's is the timeout
    hooks = HookRunner(parsed, pool, {"workspace": str(tmp_path)})
    return ModelClient(api, hooks), pool


def recorder(log: Path) -> dict[str, Any]:
    events = ["before_request", "request_retry", "after_response"]
    return {"events": events, "exec": [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(log)]}


def test_one_provider_request_per_model_request_with_the_request_hooks(dirs, tmp_path, provider):
    steps, received, entry = provider
    steps({**REPLY, "retries": [{"attempt": 1, "reason": "HTTP 503"}, {"attempt": 2, "reason": "HTTP 429"}]})
    events = tmp_path / "events.log"
    model, pool = client(tmp_path, entry, {"hooks": [recorder(events)]}, max_tokens=77, extra_body={"seed": 1})
    try:
        tool = {"name": "lookup", "description": "d", "parameters": {"type": "object", "properties": {}}}
        history = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi", "_steering": "x"}]
        reply = model.complete(history, [tool])
    finally:
        pool.close()
    assert reply.message["content"] == "hello from the provider" and reply.finish_reason == "stop"
    assert reply.usage == {
        "input_tokens": 40,
        "output_tokens": 5,
        "cache_read_tokens": None,
        "cache_creation_tokens": None,
    }
    assert model.stream is False  # no streaming through a provider in this version
    [sent] = received()
    assert sent["protocol"] == "my-wire" and sent["url"] == "http://127.0.0.1:9/v1" and sent["timeout"] == scaled(5)
    body = sent["body"]
    assert body["messages"] == history  # the history format, private fields kept
    assert body["max_tokens"] == 77 and body["seed"] == 1 and "stream" not in body
    assert body["tools"] == [{"type": "function", "function": tool}]
    seen = [json.loads(line) for line in events.read_text().splitlines()]
    assert [e["event"] for e in seen] == ["before_request", "request_retry", "request_retry", "after_response"]
    assert [e["data"]["reason"] for e in seen[1:3]] == ["HTTP 503", "HTTP 429"]
    assert sent["request_meta"] == seen[0]["data"]["request_meta"] == {"request": 1}


def test_the_deadline_is_the_request_timeout_not_the_worker_deadline(dirs, tmp_path, provider):
    steps, _received, entry = provider
    steps({**REPLY, "sleep": 2.0})  # twice the pool's 1 s hook deadline, well inside the (scaled) 5 s timeout
    model, pool = client(tmp_path, entry, deadline=1.0)
    try:
        assert model.complete([{"role": "system", "content": "s"}], []).finish_reason == "stop"
    finally:
        pool.close()
    steps({**REPLY, "sleep": 3.0})
    model, pool = client(tmp_path, entry, deadline=1.0, timeout=1)
    try:
        with pytest.raises(WorkerFailure, match="the model provider failed"):
            model.complete([{"role": "system", "content": "s"}], [])
    finally:
        pool.close()


def test_a_failed_provider_call_is_an_error_and_never_resent(dirs, tmp_path, provider):
    steps, received, entry = provider
    steps({"fail": "upstream said no"}, REPLY)
    model, pool = client(tmp_path, entry, retries=3)
    try:
        with pytest.raises(WorkerFailure) as caught:
            model.complete([{"role": "system", "content": "s"}], [])
    finally:
        pool.close()
    assert "upstream said no" in str(caught.value) and "no built-in adapter" in str(caught.value)
    assert len(received()) == 1  # no replay, whatever config.json's retries say


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({}, "no message"),
        ({**REPLY, "message": {"role": "user", "content": "x"}}, "role is not assistant"),
        ({**REPLY, "message": {"role": "assistant", "content": 3}}, "content is neither"),
        ({**REPLY, "message": {"role": "assistant", "content": "", "tool_calls": {}}}, "tool_calls that are not"),
        ({**REPLY, "finish_reason": ""}, "no finish_reason"),
        (
            {**REPLY, "message": {"role": "assistant", "tool_calls": [{"type": "function", "function": {}}]}},
            "invalid tool calls: message.tool_calls[0]: missing id",
        ),
        ({**REPLY, "usage": [1, 2]}, "usage that is neither"),
        ({**REPLY, "response": "raw"}, "a response that is not an object"),
        ({**REPLY, "retries": [{"attempt": 0, "reason": "x"}]}, "retries[0]"),
    ],
)
def test_a_malformed_reply_names_the_provider_and_the_problem(dirs, tmp_path, provider, answer, problem):
    steps, _received, entry = provider
    steps(answer)
    model, pool = client(tmp_path, entry)
    try:
        with pytest.raises(HookResultError) as caught:
            model.complete([{"role": "system", "content": "s"}], [])
    finally:
        pool.close()
    assert "the model provider (" in str(caught.value) and problem in str(caught.value)


def test_unknown_usage_stays_unknown(dirs, tmp_path, provider):
    steps, _received, entry = provider
    steps({**REPLY, "usage": None}, {**REPLY, "usage": {"input_tokens": 3}})
    model, pool = client(tmp_path, entry)
    try:
        assert model.complete([{"role": "system", "content": "s"}], []).usage is None
        assert model.complete([{"role": "system", "content": "s"}], []).usage is None
    finally:
        pool.close()


def test_config_provider_wins_over_the_manifest_provider(dirs, tmp_path, provider):
    steps, received, entry = provider
    steps(REPLY)
    other = tmp_path / "other.log"
    manifest = {"provider": {"exec": [sys.executable, str(HERE / "workers" / "recorder_worker.py"), str(other)]}}
    model, pool = client(tmp_path, entry, manifest)
    try:
        model.complete([{"role": "system", "content": "s"}], [])
    finally:
        pool.close()
    assert len(received()) == 1 and not other.exists()
    # Without config.json's provider, the manifest's is the one called (the recorder answers no reply).
    model, pool = client(tmp_path, None, manifest)
    try:
        with pytest.raises(HookResultError, match="no message"):
            model.complete([{"role": "system", "content": "s"}], [])
    finally:
        pool.close()
    assert "provider_request" in other.read_text()


def test_a_custom_protocol_needs_a_provider(dirs, tmp_path):
    with pytest.raises(ConfigError, match=r"protocol 'my-wire' is not built in .*needs a provider worker"):
        client(tmp_path, None)


@pytest.mark.parametrize(
    ("provider", "problem"),
    [
        ("python3", "provider must be an object"),
        ({"exec": ["python3"], "env": {}}, "provider: unknown field(s) env"),
        ({"exec": ["python3"], "api_key_env": "not a name"}, "provider.api_key_env must be the NAME"),
        ({"exec": ["no-such-program-anywhere"]}, "provider.exec[0] 'no-such-program-anywhere' was not found"),
        ({"exec": []}, "provider"),
    ],
)
def test_invalid_provider_entries_in_config_json_are_errors(tmp_path, provider, problem):
    raw = {"protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "provider": provider}
    with pytest.raises(ConfigError) as caught:
        parse_api_config(raw, str(tmp_path / "config.json"))
    assert problem in str(caught.value) and str(tmp_path / "config.json") in str(caught.value)


def test_config_provider_resolves_against_the_config_folder_and_names_its_key(tmp_path):
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "provider"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    raw = {"protocol": "x", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    raw["provider"] = {"exec": ["./provider", "--fast"], "cwd": "bin", "api_key_env": "MY_KEY"}
    config = parse_api_config(raw, str(tmp_path / "config.json"))
    assert config.provider is not None
    assert config.provider.argv == (str(tmp_path / "bin" / "provider"), "--fast")
    assert config.provider.cwd == str(tmp_path / "bin") and config.provider.env == ("MY_KEY",)
    assert config.protocol == "x"  # any non-empty protocol string is passed through to the provider
