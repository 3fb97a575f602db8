"""Protocol adapters: the internal history to each wire format and back, over real HTTP."""

from __future__ import annotations

import base64
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_core.errors import ModelError
from i_core.providers import (
    AnthropicAdapter,
    DeepSeekAdapter,
    OpenAIAdapter,
    ProviderError,
    ResponsesAdapter,
    exchange,
    get_adapter,
)
from i_core.transport import Transport
from i_scripted import ScriptedModel

PNG = "data:image/png;base64," + base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 16).decode()
TOOLS = [
    {
        "name": "read",
        "description": "Read a file",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    }
]
PROTOCOLS = ["openai", "deepseek", "anthropic"]
# One transport for the module: building an httpx client (its TLS context) costs ~0.1 s each time.
TRANSPORT = Transport(retries=0)


def body_for(protocol: str, history: list[dict[str, Any]], *, stream: bool = False, **kw: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "model": "m1",
        "history": history,
        "tools": TOOLS,
        "max_tokens": 256,
        "use_max_tokens": True,
        "stream": stream,
        "extra_body": None,
    }
    args.update(kw)
    return get_adapter(protocol).build_body(**args)


def run(
    model: ScriptedModel, protocol: str, history: list[dict[str, Any]], *, stream: bool, texts: list[str] | None = None
):
    adapter = get_adapter(protocol)
    retries: list[tuple[int, str]] = []
    reply = exchange(
        adapter,
        TRANSPORT,
        adapter.url(model.base_url_for(protocol)),
        body_for(protocol, history, stream=stream),
        adapter.headers("sk-secret"),
        on_retry=lambda n, reason: retries.append((n, reason)),
        on_text=(texts.append if texts is not None else None),
    )
    assert retries == []
    return reply


# --- selection ------------------------------------------------------------------------------------


def test_get_adapter_names_each_protocol() -> None:
    assert isinstance(get_adapter("openai"), OpenAIAdapter)
    assert isinstance(get_adapter("deepseek"), DeepSeekAdapter)
    assert isinstance(get_adapter("anthropic"), AnthropicAdapter)
    assert isinstance(get_adapter("responses"), ResponsesAdapter)
    with pytest.raises(
        ProviderError, match="unknown protocol 'gemini'; known protocols: openai, deepseek, anthropic, responses"
    ):
        get_adapter("gemini")
    assert issubclass(ProviderError, ModelError)


def test_urls_and_headers_per_protocol() -> None:
    assert get_adapter("openai").url("http://h:1/v1/") == "http://h:1/v1/chat/completions"
    assert get_adapter("deepseek").url("https://api.deepseek.com") == "https://api.deepseek.com/chat/completions"
    assert get_adapter("anthropic").url("https://api.anthropic.com") == "https://api.anthropic.com/v1/messages"
    assert get_adapter("openai").headers("k")["authorization"] == "Bearer k"
    assert "authorization" not in get_adapter("openai").headers(None)
    headers = get_adapter("anthropic").headers("k")
    assert headers["x-api-key"] == "k" and headers["anthropic-version"] == "2023-06-01"
    assert "x-api-key" not in get_adapter("anthropic").headers(None)


# --- build_body -----------------------------------------------------------------------------------


def test_openai_body_drops_private_fields_and_maps_tools_and_max_tokens() -> None:
    history = [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "look"}, {"type": "image_url", "image_url": {"url": PNG}}],
        },
        {
            "role": "assistant",
            "content": "ok",
            "_anthropic_content": [{"type": "text", "text": "ok"}],
            "reasoning_content": "r",
        },
    ]
    body = body_for("openai", history, use_max_tokens=False)
    assert body["messages"][0] == {"role": "system", "content": "sys"}
    assert body["messages"][1]["content"][1] == {"type": "image_url", "image_url": {"url": PNG}}
    assert body["messages"][2] == {"role": "assistant", "content": "ok"}
    assert body["tools"] == [{"type": "function", "function": TOOLS[0]}]
    assert body["max_completion_tokens"] == 256 and "max_tokens" not in body
    assert "stream" not in body and "stream_options" not in body
    assert body_for("openai", history)["max_tokens"] == 256
    streamed = body_for("openai", history, stream=True)
    assert streamed["stream"] is True and streamed["stream_options"] == {"include_usage": True}
    assert history[2]["_anthropic_content"]  # the caller's history is not modified
    assert "tools" not in body_for("openai", history, tools=[])


def test_tools_given_in_the_openai_wrapper_are_accepted() -> None:
    body = body_for("anthropic", [{"role": "user", "content": "x"}], tools=[{"type": "function", "function": TOOLS[0]}])
    assert body["tools"] == [{"name": "read", "description": "Read a file", "input_schema": TOOLS[0]["parameters"]}]
    with pytest.raises(ProviderError, match="tool #0 has no name"):
        body_for("openai", [{"role": "user", "content": "x"}], tools=[{"description": "nameless"}])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("field", ["model", "messages", "tools", "stream", "max_tokens", "system", "stream_options"])
def test_extra_body_may_not_override_reserved_fields(protocol: str, field: str) -> None:
    with pytest.raises(ProviderError, match=f"extra_body may not set {field}"):
        body_for(protocol, [{"role": "user", "content": "x"}], extra_body={field: "evil"})


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_extra_body_is_merged_last(protocol: str) -> None:
    body = body_for(
        protocol, [{"role": "user", "content": "x"}], extra_body={"temperature": 0.2, "thinking": {"type": "enabled"}}
    )
    assert body["temperature"] == 0.2 and body["thinking"] == {"type": "enabled"}
    assert list(body)[-1] == "thinking"


def test_deepseek_replays_reasoning_only_in_user_turns_that_called_tools() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "q1"},
        {"role": "assistant", "content": "a1", "reasoning_content": "plain-turn thought"},
        {"role": "user", "content": "q2"},
        {"role": "assistant", "content": None, "tool_calls": [call], "reasoning_content": "why I call"},
        {"role": "tool", "tool_call_id": "c1", "content": "result"},
        {"role": "assistant", "content": "a2", "reasoning_content": "after the tool"},
        {"role": "user", "content": "q3"},
    ]
    messages = body_for("deepseek", history)["messages"]
    assert "reasoning_content" not in messages[2]
    assert messages[4]["reasoning_content"] == "why I call"
    assert messages[6]["reasoning_content"] == "after the tool"
    assert all("reasoning_content" not in m for m in body_for("openai", history)["messages"])


def test_anthropic_body_maps_system_tools_images_and_merges_tool_results() -> None:
    calls = [
        {"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a"}'}},
        {"id": "t2", "type": "function", "function": {"name": "read", "arguments": "not json"}},
    ]
    history = [
        {"role": "system", "content": "be brief"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "see"}, {"type": "image_url", "image_url": {"url": PNG}}],
        },
        {"role": "assistant", "content": "", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "t1", "content": "A"},
        {"role": "tool", "tool_call_id": "t2", "content": "error: arguments are not valid JSON"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "[t1 image]"}, {"type": "image_url", "image_url": {"url": PNG}}],
        },
        {"role": "system", "content": "late context"},
    ]
    body = body_for("anthropic", history, use_max_tokens=False)
    assert body["system"] == "be brief" and body["max_tokens"] == 256
    messages = body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    image = messages[0]["content"][1]
    assert image == {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PNG.split(",", 1)[1]},
    }
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
        {"type": "tool_use", "id": "t2", "name": "read", "input": {}},
    ]
    merged = messages[2]["content"]
    assert [b["type"] for b in merged] == ["tool_result", "tool_result", "text", "image", "text"]
    assert merged[0] == {"type": "tool_result", "tool_use_id": "t1", "content": "A"}
    assert merged[-1] == {"type": "text", "text": "late context"}


def test_anthropic_replays_raw_content_blocks_verbatim() -> None:
    raw = [
        {"type": "thinking", "thinking": "hmm", "signature": "SIG=="},
        {"type": "tool_use", "id": "t1", "name": "read", "input": {"path": "a"}},
    ]
    call = {"id": "t1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}
    history = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call], "_anthropic_content": raw},
        {"role": "tool", "tool_call_id": "t1", "content": "A"},
    ]
    body = body_for("anthropic", history)
    assert "system" not in body
    assert body["messages"][1]["content"] == raw
    assert "max_tokens" in body_for("anthropic", history, max_tokens=None)


def test_anthropic_refuses_non_base64_data_urls() -> None:
    bad = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,rawbytes"}}]}
    with pytest.raises(ProviderError, match="base64"):
        body_for("anthropic", [bad])


# --- parse_response -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({}, "response.choices is missing"),
        ({"choices": []}, "response.choices is empty"),
        ({"choices": [{"finish_reason": "stop"}]}, r"choices\[0\].message is missing"),
        ({"choices": [{"message": {"content": "x"}, "finish_reason": 3}]}, r"choices\[0\].finish_reason is a int"),
        ({"choices": [{"message": {"content": 3}, "finish_reason": "stop"}]}, "content is not a string"),
        (
            {"choices": [{"message": {"tool_calls": [{"function": {"name": "x"}}]}, "finish_reason": "tool_calls"}]},
            r"tool_calls\[0\].id is missing",
        ),
        ({"error": {"message": "quota exceeded"}}, "model answered an error: quota exceeded"),
    ],
)
def test_openai_malformed_responses_name_what_is_missing(body: dict[str, Any], missing: str) -> None:
    with pytest.raises(ProviderError, match=missing):
        OpenAIAdapter().parse_response(body)


@pytest.mark.parametrize(
    ("body", "missing"),
    [
        ({"stop_reason": "end_turn"}, "response.content is missing"),
        ({"content": []}, "response.stop_reason is missing"),
        ({"content": [{"text": "x"}], "stop_reason": "end_turn"}, r"content\[0\].type is missing"),
        ({"content": [{"type": "tool_use", "name": "x"}], "stop_reason": "tool_use"}, r"content\[0\].id is missing"),
        ({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "Overloaded"),
    ],
)
def test_anthropic_malformed_responses_name_what_is_missing(body: dict[str, Any], missing: str) -> None:
    with pytest.raises(ProviderError, match=missing):
        AnthropicAdapter().parse_response(body)


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("stop", "stop"),
        ("tool_calls", "tool_calls"),
        ("length", "length"),
        ("content_filter", "content_filter"),
        ("eos", "other:eos"),
    ],
)
def test_openai_finish_reasons_are_normalised(raw: str, normal: str) -> None:
    reply = OpenAIAdapter().parse_response({"choices": [{"message": {"content": "x"}, "finish_reason": raw}]})
    assert reply.finish_reason == normal and reply.usage is None


@pytest.mark.parametrize(
    ("raw", "normal"),
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "stop"),  # marked as a refusal in reply.meta (test_long_tail.py)
        ("pause_turn", "other:pause_turn"),
    ],
)
def test_anthropic_stop_reasons_are_normalised(raw: str, normal: str) -> None:
    assert AnthropicAdapter().parse_response({"content": [], "stop_reason": raw}).finish_reason == normal


def test_openai_tool_call_arguments_given_as_object_become_json_text() -> None:
    body = {
        "choices": [
            {
                "message": {"tool_calls": [{"id": "c", "function": {"name": "n", "arguments": {"a": 1}}}]},
                "finish_reason": "tool_calls",
            }
        ]
    }
    reply = OpenAIAdapter().parse_response(body)
    assert reply.message["tool_calls"][0]["function"]["arguments"] == '{"a":1}'
    assert reply.message["content"] is None and reply.raw is body


# --- usage ----------------------------------------------------------------------------------------

USAGE_CASES = [
    (
        "openai",
        {"prompt_tokens": 100, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 64}},
        {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 64, "cache_creation_tokens": None},
    ),
    (
        "openai",
        {"prompt_tokens": 100, "completion_tokens": 7},
        {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": None, "cache_creation_tokens": None},
    ),
    (
        "deepseek",
        {"prompt_tokens": 100, "completion_tokens": 7, "prompt_cache_hit_tokens": 80, "prompt_cache_miss_tokens": 20},
        {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 80, "cache_creation_tokens": None},
    ),
    (
        "deepseek",
        {"completion_tokens": 7, "prompt_cache_hit_tokens": 80, "prompt_cache_miss_tokens": 20},
        {"input_tokens": 100, "output_tokens": 7, "cache_read_tokens": 80, "cache_creation_tokens": None},
    ),
    (
        "anthropic",
        {"input_tokens": 10, "cache_read_input_tokens": 80, "cache_creation_input_tokens": 30, "output_tokens": 5},
        {"input_tokens": 120, "output_tokens": 5, "cache_read_tokens": 80, "cache_creation_tokens": 30},
    ),
    (
        "anthropic",
        {"input_tokens": 10, "output_tokens": 5},
        {"input_tokens": 10, "output_tokens": 5, "cache_read_tokens": None, "cache_creation_tokens": None},
    ),
    (  # a compatible service's cache writes (OpenRouter, Bedrock): inside the total, creation, no hit
        "openai",
        {
            "prompt_tokens": 500,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 300},
        },
        {"input_tokens": 500, "output_tokens": 7, "cache_read_tokens": 100, "cache_creation_tokens": 300},
    ),
    (  # written + read beyond the total: the cache figures are unknown, never 0
        "openai",
        {
            "prompt_tokens": 50,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 43},
        },
        {"input_tokens": 50, "output_tokens": 7, "cache_read_tokens": None, "cache_creation_tokens": None},
    ),
    ("openai", "omit", None),
    ("openai", {"prompt_tokens": -1, "completion_tokens": 7}, None),
    ("openai", {"prompt_tokens": 10, "completion_tokens": "7"}, None),
    ("openai", {"prompt_tokens": True, "completion_tokens": 7}, None),
    ("openai", {"prompt_tokens": 10}, None),
    ("deepseek", {"prompt_tokens": 10, "completion_tokens": 1, "prompt_cache_hit_tokens": -5}, None),
    ("anthropic", {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 1.5}, None),
    ("anthropic", {"output_tokens": 5}, None),
    ("anthropic", "omit", None),
]


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(("protocol", "wire", "expected"), USAGE_CASES)
def test_usage_mapping_over_http(protocol: str, wire: Any, expected: Any, stream: bool) -> None:
    with ScriptedModel([{"text": "hi", "usage": wire}]) as model:
        reply = run(
            model, protocol, [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}], stream=stream
        )
    assert reply.usage == expected
    if stream and wire != "omit":
        assert reply.raw["usage"]  # the reconstructed raw body carries the usage for after_response


@given(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3)),
)
def test_usage_is_either_valid_counts_or_none(prompt: Any, completion: Any) -> None:
    reply = OpenAIAdapter().parse_response(
        {
            "choices": [{"message": {"content": ""}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion},
        }
    )
    valid = all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in (prompt, completion))
    if valid:
        assert reply.usage == {
            "input_tokens": prompt,
            "output_tokens": completion,
            "cache_read_tokens": None,
            "cache_creation_tokens": None,
        }
    else:
        assert reply.usage is None


# --- round trips over real HTTP -------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_tool_call_round_trip(protocol: str, stream: bool) -> None:
    script = [
        {
            "text": "Reading.",
            "tool_calls": [
                {"name": "read", "arguments": {"path": "README.md"}},
                {"name": "read", "arguments": {"path": "b.md"}},
            ],
        },
        {"text": "Summary: {{last_tool_result}}"},
    ]
    history: list[dict[str, Any]] = [
        {"role": "system", "content": "sys"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "summarise"}, {"type": "image_url", "image_url": {"url": PNG}}],
        },
    ]
    texts: list[str] = []
    with ScriptedModel(script) as model:
        first = run(model, protocol, history, stream=stream, texts=texts)
        assert first.finish_reason == "tool_calls"
        assert first.message["content"] == "Reading."
        calls = first.message["tool_calls"]
        assert [orjson.loads(c["function"]["arguments"]) for c in calls] == [{"path": "README.md"}, {"path": "b.md"}]
        assert all(c["type"] == "function" and c["id"] for c in calls)
        assert ("_anthropic_content" in first.message) == (protocol == "anthropic")
        history += [first.message] + [
            {"role": "tool", "tool_call_id": c["id"], "content": f"content of {i}"} for i, c in enumerate(calls)
        ]
        second = run(model, protocol, history, stream=stream, texts=texts)
        wire = model.requests[-1].body
    assert second.finish_reason == "stop" and second.message["content"] == "Summary: content of 1"
    assert "tool_calls" not in second.message
    assert "".join(texts) == ("Reading.Summary: content of 1" if stream else "")
    if protocol == "anthropic":
        assert wire["system"] == "sys"
        assert [b["type"] for b in wire["messages"][2]["content"]] == ["tool_result", "tool_result"]
        assert wire["messages"][0]["content"][1]["type"] == "image"
    else:
        assert [m["role"] for m in wire["messages"]] == ["system", "user", "assistant", "tool", "tool"]
        assert wire["messages"][1]["content"][1]["image_url"]["url"] == PNG


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_thinking_blocks_survive_the_round_trip(stream: bool) -> None:
    script = [
        {"reasoning": "let me think", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]},
        {"text": "done"},
    ]
    history: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    with ScriptedModel(script) as model:
        first = run(model, "anthropic", history, stream=stream)
        thinking = first.message["_anthropic_content"][0]
        assert thinking == {"type": "thinking", "thinking": "let me think", "signature": "scripted-signature-1"}
        history += [
            first.message,
            {"role": "tool", "tool_call_id": first.message["tool_calls"][0]["id"], "content": "A"},
        ]
        run(model, "anthropic", history, stream=stream)
        assert model.requests[-1].body["messages"][1]["content"][0] == thinking


@pytest.mark.parametrize("stream", [False, True])
def test_deepseek_reasoning_is_parsed_and_replayed(stream: bool) -> None:
    script = [
        {"reasoning": "need the file", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]},
        {"text": "done"},
    ]
    history: list[dict[str, Any]] = [{"role": "system", "content": "s"}, {"role": "user", "content": "go"}]
    with ScriptedModel(script) as model:
        first = run(model, "deepseek", history, stream=stream)
        assert first.message["reasoning_content"] == "need the file"
        history += [
            first.message,
            {"role": "tool", "tool_call_id": first.message["tool_calls"][0]["id"], "content": "A"},
        ]
        run(model, "deepseek", history, stream=stream)
        assert model.requests[-1].body["messages"][2]["reasoning_content"] == "need the file"


# --- stream assembly without HTTP -----------------------------------------------------------------


def test_openai_stream_without_finish_reason_is_incomplete() -> None:
    events = [{"choices": [{"index": 0, "delta": {"content": "par"}}]}]
    seen: list[str] = []
    with pytest.raises(ProviderError, match="without a finish_reason or \\[DONE\\]"):
        OpenAIAdapter().parse_stream(events, seen.append)
    assert seen == ["par"]


def test_openai_stream_error_event_is_reported() -> None:
    with pytest.raises(ProviderError, match="stream reported an error: overloaded"):
        OpenAIAdapter().parse_stream([{"error": {"message": "overloaded"}}], lambda _t: None)


def test_anthropic_stream_errors() -> None:
    with pytest.raises(ProviderError, match="Overloaded"):
        AnthropicAdapter().parse_stream(
            [{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}], print
        )
    with pytest.raises(ProviderError, match="without a stop_reason"):
        AnthropicAdapter().parse_stream([{"type": "message_start", "message": {}}], print)
    bad_json = [
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "t", "name": "n", "input": {}},
        },
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a": '}},
        {"type": "content_block_stop", "index": 0},
    ]
    with pytest.raises(ProviderError, match="invalid JSON for tool_use input"):
        AnthropicAdapter().parse_stream(bad_json, print)


# --- on_raw: observers see the answer before the adapter may reject it ---------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_on_raw_sees_an_answer_the_adapter_then_rejects(stream: bool) -> None:
    usage = {"prompt_tokens": 11, "completion_tokens": 2}
    if stream:
        chunk = {"choices": [{"index": 0, "delta": {"content": "par"}}], "usage": usage}
        raw_body = b"data: " + orjson.dumps(chunk) + b"\n\n"
    else:  # a complete body without finish_reason is accepted now; one with a bad value is not
        raw_body = orjson.dumps({"choices": [{"message": {"content": "par"}, "finish_reason": 0}], "usage": usage})
    seen: list[dict[str, Any]] = []
    adapter = get_adapter("openai")
    history = [{"role": "user", "content": "q"}]
    with ScriptedModel([{"raw_body": raw_body}]) as model, pytest.raises(ProviderError, match="finish_reason"):
        exchange(
            adapter,
            TRANSPORT,
            adapter.url(model.base_url),
            body_for("openai", history, stream=stream),
            {},
            on_retry=lambda *_: None,
            on_raw=seen.append,
        )
    assert seen[0]["usage"] == usage
    assert seen[0]["choices"][0]["message"]["content"] == "par"


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_on_raw_gets_the_reconstructed_stream_body(protocol: str) -> None:
    seen: list[dict[str, Any]] = []
    adapter = get_adapter(protocol)
    with ScriptedModel([{"text": "hello", "tool_calls": [{"name": "read", "arguments": {"path": "a"}}]}]) as model:
        reply = exchange(
            adapter,
            TRANSPORT,
            adapter.url(model.base_url_for(protocol)),
            body_for(protocol, [{"role": "user", "content": "q"}], stream=True),
            adapter.headers(None),
            on_retry=lambda *_: None,
            on_raw=seen.append,
        )
    assert seen == [reply.raw]
    assert reply.message["content"] == "hello"


def test_anthropic_raw_keeps_a_partial_tool_input_as_text() -> None:
    parser = AnthropicAdapter().stream_parser(lambda _t: None)
    parser.feed(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use", "id": "t", "name": "n"}}
    )
    parser.feed(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"a"'}}
    )
    assert parser.raw()["content"] == [{"type": "tool_use", "id": "t", "name": "n", "input": '{"a"'}]
    assert parser.raw()["stop_reason"] is None
