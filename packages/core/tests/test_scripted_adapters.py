"""The core's adapters against the scripted model: recording, templates, finish reasons, reply
modes and usage as the core parses them. The server's own tests are in packages/scripted-model."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from i_core.providers import exchange, get_adapter
from i_core.transport import Transport, TransportError
from i_scripted import ScriptedModel, prompt_tokens, reference_tokens

TRANSPORT = Transport(retries=0)


def ask(model: ScriptedModel, protocol: str, history: list[dict[str, Any]], *, stream: bool = False, **kw: Any):
    adapter = get_adapter(protocol)
    body = adapter.build_body(
        model="m", history=history, tools=None, max_tokens=64, use_max_tokens=True, stream=stream, extra_body=None
    )
    body.update(kw)
    return exchange(
        adapter,
        TRANSPORT,
        adapter.url(model.base_url_for(protocol)),
        body,
        adapter.headers("sk-live-123"),
        on_retry=lambda *_: None,
    )


USER = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_requests_are_recorded_with_secrets_redacted(protocol: str) -> None:
    with ScriptedModel([{"text": "hi"}]) as model:
        ask(model, protocol, USER)
    (request,) = model.requests
    assert request.method == "POST"
    assert request.path == ("/v1/messages" if protocol == "anthropic" else "/v1/chat/completions")
    key = "x-api-key" if protocol == "anthropic" else "authorization"
    assert request.headers[key] == "<redacted>"
    assert "sk-live-123" not in orjson.dumps(request.headers).decode()
    assert request.body["model"] == "m"


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_templates_fill_in_the_last_user_message_and_tool_result(protocol: str, stream: bool) -> None:
    script = [
        {"tool_calls": [{"name": "read", "arguments": '{"path": "x"}', "id": "call_fixed"}]},
        {"text": "Q={{last_user_message}} R={{last_tool_result}}"},
    ]
    with ScriptedModel(script) as model:
        first = ask(model, protocol, USER, stream=stream)
        assert first.message["tool_calls"][0]["id"] == "call_fixed"
        history = [*USER, first.message, {"role": "tool", "tool_call_id": "call_fixed", "content": "# Title"}]
        second = ask(model, protocol, history, stream=stream)
    assert second.message["content"] == "Q=hello there R=# Title"


def test_finish_reason_is_given_in_openai_terms_for_both_wires() -> None:
    with ScriptedModel(
        [{"text": "cut", "finish_reason": "length"}, {"text": "cut", "finish_reason": "length"}]
    ) as model:
        assert ask(model, "openai", USER).finish_reason == "length"
        assert ask(model, "anthropic", USER).finish_reason == "length"  # sent as max_tokens on the wire
        assert model.requests[-1].path == "/v1/messages"


def test_a_step_can_force_the_reply_mode() -> None:
    with ScriptedModel([{"text": "plain", "stream": False}, {"text": "sse", "stream": True}]) as model:
        with pytest.raises(TransportError, match="answered JSON instead of an event stream"):
            ask(model, "openai", USER, stream=True)
        with pytest.raises(TransportError, match="not JSON"):
            ask(model, "openai", USER)  # an event stream where JSON was asked for


def test_streamed_openai_usage_only_with_include_usage() -> None:
    with ScriptedModel([{"text": "a"}, {"text": "b"}]) as model:
        assert ask(model, "openai", USER, stream=True).usage is not None
        assert ask(model, "openai", USER, stream=True, stream_options={"include_usage": False}).usage is None


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_usage_is_counted_from_the_request_and_the_reply(protocol: str, stream: bool) -> None:
    script = [{"text": "Hello world.", "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}]
    with ScriptedModel(script) as model:
        reply = ask(model, protocol, USER, stream=stream)
    (request,) = model.requests
    kind = "anthropic" if protocol == "anthropic" else "openai"
    output = reference_tokens("Hello world.") + reference_tokens("read") + reference_tokens('{"path":"README.md"}')
    assert reply.usage is not None
    assert reply.usage["input_tokens"] == prompt_tokens(kind, request.body)
    assert reply.usage["output_tokens"] == output == 3 + 1 + 11
