"""The `responses` protocol: the core's adapter and stream parser, the bundled module's wire
transform both ways, the start-up check, and the hook order of the cache around the module."""

from __future__ import annotations

import json
from typing import Any

import pytest

from i_core.bundled.responses import INCLUDE, after_response, before_request, history_reply, responses_request
from i_core.errors import ConfigError, ContextTooLong
from i_core.manifest import parse_manifest
from i_core.providers import ProviderError, ResponsesAdapter, exchange, require_protocol_modules
from i_core.transport import Transport, TransportError
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

SYSTEM = {"role": "system", "content": "be brief"}
TOOLS = [{"name": "read", "description": "read a file", "parameters": {"type": "object", "properties": {}}}]


def body_for(history: list[dict[str, Any]], *, stream: bool = False, **extra: Any) -> dict[str, Any]:
    return ResponsesAdapter().build_body(
        model="m",
        history=history,
        tools=TOOLS,
        max_tokens=200,
        use_max_tokens=False,
        stream=stream,
        extra_body=extra or None,
    )


def ask(
    model: ScriptedModel, history: list[dict[str, Any]], *, stream: bool, omit: tuple[str, ...] = ()
) -> tuple[Any, str, list[dict]]:
    """One request through the core's exchange, the module converting both ways; (reply, shown, raw)."""
    adapter, shown, raws = ResponsesAdapter(), [], []

    def on_raw(response: dict[str, Any]) -> dict[str, Any]:
        raws.append(response)
        return after_response({"protocol": "responses", "response": response}, None)  # type: ignore[arg-type]

    wire = before_request({"protocol": "responses", "body": body_for(history, stream=stream)}, None)["body"]  # type: ignore[arg-type]
    transport = Transport(timeout=scaled(10), retries=0)
    try:
        reply = exchange(
            adapter, transport, adapter.url(model.base_url), wire, adapter.headers("k"),
            on_retry=lambda *_: None, on_text=shown.append, on_raw=on_raw, omit=omit,
        )  # fmt: skip
    finally:
        transport.close()
    return reply, "".join(shown), raws


# -- the core's half -------------------------------------------------------------------------------


def test_the_core_builds_a_history_format_body_that_keeps_no_server_state() -> None:
    history = [SYSTEM, {"role": "user", "content": "hi"}]
    body = body_for(history, stream=True, temperature=0.2)
    assert body["messages"] is history and body["store"] is False and body["max_output_tokens"] == 200
    assert body["stream"] is True and body["temperature"] == 0.2 and "stream_options" not in body
    assert ResponsesAdapter().url("https://api.openai.com/v1/") == "https://api.openai.com/v1/responses"
    for field in ("previous_response_id", "store", "conversation"):
        with pytest.raises(ProviderError, match=f"extra_body may not set {field}"):
            body_for(history, **{field: "x"})


@pytest.mark.parametrize(
    "wire",
    [
        {"model": "m", "input": [], "store": False, "previous_response_id": "resp_1"},
        {"model": "m", "input": [], "store": True},
        {"model": "m", "input": []},
        {"model": "m", "messages": [], "store": False},
    ],
)
def test_a_body_that_leans_on_server_state_or_was_not_transformed_is_never_sent(wire: dict[str, Any]) -> None:
    transport = Transport(timeout=5, retries=0)
    with ScriptedModel([{"text": "never"}]) as model, pytest.raises(ProviderError, match=r"server state|no input"):
        exchange(ResponsesAdapter(), transport, model.base_url + "/responses", wire, {}, on_retry=lambda *_: None)
    transport.close()
    assert model.requests == []


def test_an_unconverted_answer_or_a_malformed_history_reply_is_a_provider_error() -> None:
    adapter = ResponsesAdapter()
    with pytest.raises(ProviderError, match="not converted to the history format"):
        adapter.parse_response({"object": "response", "status": "completed", "output": []})
    with pytest.raises(ProviderError, match=r"history reply\.message is missing"):
        adapter.parse_response({"finish_reason": "stop"})
    with pytest.raises(ProviderError, match=r"message\.role is not 'assistant'"):
        adapter.parse_response({"message": {"role": "user", "content": "x"}, "finish_reason": "stop"})
    reply = adapter.parse_response(
        {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop", "usage": {"input_tokens": -1}}
    )
    assert reply.usage is None  # an invalid count voids the usage: unknown, never 0


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_and_its_reasoning_round_trip_through_the_real_wire(stream: bool) -> None:
    steps = [
        {"reasoning": "look first", "text": "Let me look.", "tool_calls": [{"name": "read", "arguments": {"p": 1}}]},
        {"text": "It says {{last_tool_result}}"},
    ]
    with ScriptedModel(steps) as model:
        history = [SYSTEM, {"role": "user", "content": "read it"}]
        first, shown, raws = ask(model, history, stream=stream)
        assert first.finish_reason == "tool_calls" and first.message["content"] == "Let me look."
        (call,) = first.message["tool_calls"]
        assert call["function"] == {"name": "read", "arguments": '{"p":1}'}
        reasoning, said = first.message["_responses_output"]
        assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
        # The message carried a phase: it is kept to be resent as it came (no id: store is false).
        assert said == {"type": "message", "role": "assistant", "phase": "commentary",
                        "content": [{"type": "output_text", "text": "Let me look."}]}  # fmt: skip
        assert raws[0]["status"] == "completed" and raws[0]["usage"]["input_tokens"] == first.usage["input_tokens"]
        assert shown == ("Let me look." if stream else "")
        history += [first.message, {"role": "tool", "tool_call_id": call["id"], "content": "the text"}]
        second, _, _ = ask(model, history, stream=stream)
    assert second.message["content"] == "It says the text"
    assert second.message["_responses_output"][0]["phase"] == "final_answer"
    sent = model.requests[1].body["input"]
    # The reasoning item goes back verbatim before the assistant's message and call, then the output.
    assert [item["type"] for item in sent] == [
        "message",
        "reasoning",
        "message",
        "function_call",
        "function_call_output",
    ]
    assert sent[1] == reasoning and sent[2] == said and sent[3]["call_id"] == sent[4]["call_id"] == call["id"]


def test_streamed_text_is_shown_as_it_arrives_with_items_kept_apart() -> None:
    events = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {"type": "message", "content": []}},
        {"type": "response.output_text.delta", "output_index": 0, "delta": "First"},
        {"type": "response.output_item.added", "output_index": 1, "item": {"type": "function_call", "name": "t"}},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": '{"a"'},
        {"type": "response.function_call_arguments.delta", "output_index": 1, "delta": ":1}"},
        {"type": "response.output_item.added", "output_index": 2, "item": {"type": "message", "content": []}},
        {"type": "response.output_text.delta", "output_index": 2, "delta": "Then"},
    ]
    shown: list[str] = []
    parser = ResponsesAdapter().stream_parser(shown.append)
    for event in events:
        parser.feed(event)
    assert shown == ["First", "\n\nThen"]
    raw = parser.raw()  # cut before its final event: what after_response sees, and rejects
    assert raw["status"] == "in_progress" and raw["output"][1]["arguments"] == '{"a":1}'
    assert "did not complete (status 'in_progress')" in history_reply(raw)["error"]["message"]
    final = {"id": "r", "status": "completed", "output": [{"type": "message", "content": []}]}
    parser.feed({"type": "response.completed", "response": final})
    assert parser.raw() is final  # the final event's whole response wins


def test_a_stream_error_event_is_raised_and_a_context_error_is_recognised() -> None:
    parser = ResponsesAdapter().stream_parser(lambda _text: None)
    with pytest.raises(ContextTooLong):
        parser.feed({"type": "error", "code": "context_length_exceeded", "message": "Your input exceeds the context"})
    parser = ResponsesAdapter().stream_parser(lambda _text: None)
    with pytest.raises(ProviderError, match="model stream reported an error: overloaded"):
        parser.feed({"type": "error", "code": "server_error", "message": "overloaded"})
    assert parser.raw()["error"]["message"] == "overloaded"  # after_response still sees what failed


def test_a_too_long_request_is_a_context_rejection_the_agent_can_recover_from() -> None:
    with ScriptedModel([{"text": "never"}], context_window=50) as model, pytest.raises(ContextTooLong):
        ask(model, [SYSTEM, {"role": "user", "content": "word " * 100}], stream=False)
    assert model.rejections == 1 and model.served == 0


# -- the module's half -----------------------------------------------------------------------------


def test_the_history_becomes_responses_input_items() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    history = [
        SYSTEM,
        {"role": "user", "content": [{"type": "text", "text": "look"}, image]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function",
                                                                "function": {"name": "read", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
        {"role": "system", "content": "a later note"},
    ]  # fmt: skip
    wire = responses_request({**body_for(history), "include": ["file_search_call.results"]})
    assert wire["instructions"] == "be brief" and wire["store"] is False and "messages" not in wire
    assert wire["include"] == ["file_search_call.results", INCLUDE]
    assert wire["tools"] == [{"type": "function", "name": "read", "description": "read a file",
                              "parameters": {"type": "object", "properties": {}}, "strict": False}]  # fmt: skip
    assert wire["input"] == [
        {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "look"},
            {"type": "input_image", "image_url": "data:image/png;base64,AAAA", "detail": "auto"},
        ]},
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "a\nb"},
        {"type": "message", "role": "system", "content": "a later note"},
    ]  # fmt: skip
    assert wire["max_output_tokens"] == 200


def test_other_protocols_pass_through_the_module_unchanged() -> None:
    data = {"protocol": "openai", "body": {"model": "m", "messages": [SYSTEM]}, "response": {"choices": []}}
    assert before_request(dict(data), None) == data  # type: ignore[arg-type]
    assert after_response(dict(data), None) == data  # type: ignore[arg-type]


def test_a_response_that_did_not_complete_is_rejected_with_its_reason() -> None:
    incomplete = {"status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"}, "output": []}
    assert "incomplete (max_output_tokens)" in history_reply(incomplete)["error"]["message"]
    error = {"code": "context_length_exceeded", "message": "Your input exceeds the context window"}
    assert history_reply({"status": "failed", "error": error, "output": []}) == {"error": error}
    with pytest.raises(ContextTooLong):
        ResponsesAdapter().parse_response(history_reply({"status": "failed", "error": error}))
    broken = {"status": "completed", "output": [{"type": "function_call", "name": "read", "arguments": "{}"}]}
    assert "without a call_id" in history_reply(broken)["error"]["message"]
    assert history_reply("nonsense")["error"]["type"] == "malformed_response"


def test_a_refusal_is_the_answer_marked_as_one() -> None:
    response = {
        "status": "completed",
        "output": [{"type": "message", "content": [{"type": "output_text", "text": "Well."},
                                                   {"type": "refusal", "refusal": "I cannot help."}]}],
        "usage": {"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 8}},
    }  # fmt: skip
    reply = ResponsesAdapter().parse_response(history_reply(response))
    assert reply.message["content"] == "Well.\n\nI cannot help." and reply.meta == {"refusal": True}
    assert reply.usage == {"input_tokens": 9, "output_tokens": 4, "cache_read_tokens": 8, "cache_creation_tokens": None}


def test_cache_write_tokens_are_cache_creation_inside_the_input() -> None:
    def usage_of(details: dict[str, int]) -> object:
        response = {
            "status": "completed",
            "output": [{"type": "message", "content": [{"type": "output_text", "text": "ok"}]}],
            "usage": {"input_tokens": 4100, "output_tokens": 4, "input_tokens_details": details},
        }
        return ResponsesAdapter().parse_response(history_reply(response)).usage

    written = usage_of({"cached_tokens": 0, "cache_write_tokens": 4012})  # OpenRouter's figure as recorded
    assert written == {"input_tokens": 4100, "output_tokens": 4, "cache_read_tokens": 0, "cache_creation_tokens": 4012}
    too_many = usage_of({"cached_tokens": 100, "cache_write_tokens": 4012})
    assert too_many == {
        "input_tokens": 4100,
        "output_tokens": 4,
        "cache_read_tokens": None,
        "cache_creation_tokens": None,
    }


# -- the manifest ----------------------------------------------------------------------------------


def test_responses_without_its_module_in_the_manifest_is_refused(tmp_path) -> None:
    empty = parse_manifest({"hooks": []}, tmp_path, "manifest.json")
    with pytest.raises(ConfigError, match=r"needs the 'responses' module .* responses-compact"):
        require_protocol_modules("responses", empty)
    require_protocol_modules("openai", empty)  # the others need no module


def test_messages_with_a_phase_are_resent_in_order_with_it() -> None:
    output = [
        {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Checking.", "annotations": [], "logprobs": []}]},
        {"type": "function_call", "call_id": "call_0", "name": "read", "arguments": "{}", "status": "completed"},
        {"type": "message", "id": "msg_2", "role": "assistant", "phase": "final_answer",
         "content": [{"type": "output_text", "text": "Done."}]},
    ]  # fmt: skip
    reply = history_reply({"status": "completed", "output": output})
    message = reply["message"]
    assert message["content"] == "Checking.\n\nDone."
    wire = responses_request({"messages": [SYSTEM, {"role": "user", "content": "go"}, message]})
    assert wire["input"][1:] == [
        {"type": "message", "role": "assistant", "phase": "commentary",
         "content": [{"type": "output_text", "text": "Checking."}]},
        {"type": "message", "role": "assistant", "phase": "final_answer",
         "content": [{"type": "output_text", "text": "Done."}]},
        {"type": "function_call", "call_id": "call_0", "name": "read", "arguments": "{}"},
    ]  # fmt: skip


def test_messages_without_a_phase_are_resent_as_the_joined_text() -> None:
    output = [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hi."}]}]
    message = history_reply({"status": "completed", "output": output})["message"]
    assert "_responses_output" not in message
    wire = responses_request({"messages": [SYSTEM, {"role": "user", "content": "go"}, message]})
    assert wire["input"][1:] == [{"type": "message", "role": "assistant", "content": "Hi."}]


def test_a_refused_field_is_named_with_the_option_that_leaves_it_out() -> None:
    refusal = {"status": 400, "error_message": "Unknown parameter: 'include'.", "error_type": "invalid_request_error"}
    with ScriptedModel([refusal]) as model, pytest.raises(TransportError) as caught:
        ask(model, [SYSTEM, {"role": "user", "content": "hi"}], stream=False)
    assert str(caught.value).endswith(
        'the server refused the field "include": add "omit_fields": ["include"] to config.json to leave it out'
    )


def test_omit_fields_leaves_store_include_and_phase_out_and_nothing_else() -> None:
    said = {
        "type": "message",
        "role": "assistant",
        "phase": "commentary",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    history = [SYSTEM, {"role": "user", "content": "hi"}, {"role": "assistant", "content": "ok", "_responses_output": [said]},
               {"role": "user", "content": "again"}]  # fmt: skip
    omit = ("store", "include", "phase")
    with ScriptedModel([{"text": "fine"}]) as model:
        reply, _, _ = ask(model, history, stream=False, omit=omit)
    sent = model.requests[0].body
    assert reply.message["content"] == "fine"
    assert "store" not in sent and "include" not in sent and "phase" not in json.dumps(sent)
    assert sent["input"][1] == {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": "ok"}],
    }
    # Without the option, store must stay false: a hook that drops it is still refused.
    with pytest.raises(ProviderError, match="store not false"):
        ResponsesAdapter().check_wire({"input": [], "model": "m"})
    ResponsesAdapter().check_wire({"input": [], "model": "m"}, ("store",))


@pytest.mark.parametrize("value", ["include", ["messages"], [1]])
def test_omit_fields_takes_only_fields_a_server_may_refuse(value: object) -> None:
    from i_core.settings import parse_api_config

    base = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "protocol": "responses"}
    assert parse_api_config({**base, "omit_fields": ["include", "phase"]}).omit_fields == ("include", "phase")
    with pytest.raises(ConfigError, match="omit_fields must be a list of request fields to leave out, of: store"):
        parse_api_config({**base, "omit_fields": value})
