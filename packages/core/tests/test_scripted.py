"""The scripted model server: recording, script steps, wire checks and its command line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.providers import exchange, get_adapter
from i_core.scripted import ScriptedModel, ScriptError, load_script
from i_core.transport import Transport, TransportError

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


def raw_post(model: ScriptedModel, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    return TRANSPORT.post(model.root_url + path, body, headers or {}, stream=False, on_retry=lambda *_: None)


USER = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]


def test_urls_follow_each_protocol_convention() -> None:
    with ScriptedModel([]) as model:
        assert model.base_url == model.root_url + "/v1"
        assert model.base_url_for("openai") == model.base_url_for("deepseek") == model.base_url
        assert model.base_url_for("anthropic") == model.root_url
        assert model.root_url.startswith("http://127.0.0.1:")


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
def test_an_exhausted_script_answers_500_with_a_clear_message(protocol: str) -> None:
    with ScriptedModel([{"text": "one"}]) as model:
        ask(model, protocol, USER)
        with pytest.raises(TransportError, match="scripted model: script exhausted after 1 requests") as caught:
            ask(model, protocol, USER)
    assert caught.value.status == 500


def test_a_callable_step_answers_from_the_request() -> None:
    seen: list[Any] = []

    def step(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"text": f"you said {request['messages'][-1]['content']}"}

    with ScriptedModel([step]) as model:
        reply = ask(model, "openai", USER)
    assert reply.message["content"] == "you said hello there"
    assert seen[0]["model"] == "m"


def test_a_broken_callable_is_reported_not_hung() -> None:
    with (
        ScriptedModel([lambda _r: {"bogus": 1}]) as model,
        pytest.raises(TransportError, match=r"step failed: .*unknown field"),
    ):
        ask(model, "openai", USER)


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


def test_unknown_step_fields_are_refused_up_front() -> None:
    with pytest.raises(ScriptError, match=r"step 0: unknown field.*txt"):
        ScriptedModel([{"txt": "typo"}])
    with pytest.raises(ScriptError, match="needs a name"):
        ScriptedModel([{"tool_calls": [{"arguments": {}}]}])


def test_unknown_paths_name_the_served_endpoints() -> None:
    with ScriptedModel([{"text": "x"}]) as model:
        with pytest.raises(
            TransportError, match=r"nothing is served at /v1/v1/messages.*/v1/messages \(base_url is the root\)"
        ):
            raw_post(model, "/v1/v1/messages", {"model": "m"})
        assert model.served == 0


@pytest.mark.parametrize(
    ("path", "body", "headers", "problem"),
    [
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x", "_private": 1}]},
            {},
            r"messages\[0\] carries private field\(s\) _private",
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c9", "content": "x"}]},
            {},
            "tool_call_id 'c9' answers no pending tool call",
        ),
        (
            "/v1/chat/completions",
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "n", "arguments": "{}"}}],
                    },
                    {"role": "user", "content": "x"},
                ],
            },
            {},
            "tool call.*c1 have no result",
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {}},
            {},
            "stream_options is only allowed",
        ),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}, {}, "model is missing"),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            {},
            "anthropic-version header is missing",
        ),
        (
            "/v1/messages",
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            {"anthropic-version": "v"},
            "max_tokens is required",
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            },
            {"anthropic-version": "v"},
            "roles must alternate",
        ),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "a"}]},
            {"anthropic-version": "v"},
            "system goes top-level",
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "n", "input": {}}]},
                    {"role": "user", "content": "no result"},
                ],
            },
            {"anthropic-version": "v"},
            r"tool_use id\(s\) \['t1'\] have no tool_result",
        ),
    ],
)
def test_wire_mistakes_are_rejected_like_a_real_provider(
    path: str, body: dict[str, Any], headers: dict[str, str], problem: str
) -> None:
    with ScriptedModel([{"text": "x"}]) as model:
        with pytest.raises(TransportError, match=problem) as caught:
            raw_post(model, path, body, headers)
        assert caught.value.status == 400
        assert model.served == 0  # a rejected request does not consume a step


def test_load_script_accepts_a_list_or_a_steps_object(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('[{"text": "a"}]')
    (tmp_path / "b.json").write_text('{"steps": [{"text": "b"}]}')
    (tmp_path / "c.json").write_text('{"text": "c"}')
    assert load_script(tmp_path / "a.json") == [{"text": "a"}]
    assert load_script(tmp_path / "b.json") == [{"text": "b"}]
    with pytest.raises(ScriptError, match="a script is a JSON list of steps"):
        load_script(tmp_path / "c.json")


def test_the_command_line_prints_the_base_url_serves_and_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(orjson.dumps([{"text": "from the CLI"}]).decode())
    record = tmp_path / "requests.ndjson"
    process = subprocess.Popen(
        [sys.executable, "-m", "i_core.scripted", "--script", str(script), "--port", "0", "--record", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        adapter = get_adapter("openai")
        body = adapter.build_body(
            model="m", history=USER, tools=None, max_tokens=None, use_max_tokens=True, stream=False, extra_body=None
        )
        answer = TRANSPORT.post(
            adapter.url(base_url), body, adapter.headers("sk-cli"), stream=False, on_retry=lambda *_: None
        )
        assert answer["choices"][0]["message"]["content"] == "from the CLI"
    finally:
        process.terminate()
        process.wait(timeout=10)
    (line,) = record.read_bytes().splitlines()
    recorded = orjson.loads(line)
    assert recorded["path"] == "/v1/chat/completions" and recorded["headers"]["authorization"] == "<redacted>"


def test_the_command_line_refuses_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('[{"txet": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "i_core.scripted", "--script", str(script)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "cannot load" in result.stderr and "unknown field(s) txet" in result.stderr
    assert result.stdout == ""
