"""The OpenAI Responses API at POST /v1/responses: bodies, typed SSE events, tool calls, usage
counted by content, the context window enforced with OpenAI's error, and what a real server refuses."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from scripted_http import PROSE, post, sse_events

from i_scripted import RESPONSES_PATH, ScriptedModel, prompt_tokens, reference_tokens

TOOL = {"type": "function", "name": "read", "parameters": {"type": "object", "properties": {}}, "strict": False}


def request(text: str = "hello", **extra: Any) -> dict[str, Any]:
    return {"model": "m", "instructions": "be brief", "input": [{"type": "message", "role": "user", "content": text}],
            "store": False, **extra}  # fmt: skip


def ask(model: ScriptedModel, body: dict[str, Any]) -> tuple[int, bytes]:
    return post(model.root_url, RESPONSES_PATH, body, {"authorization": "Bearer sk-secret"})


def test_a_json_answer_is_a_response_object_with_usage_counted_from_the_content() -> None:
    body = request(PROSE)
    with ScriptedModel([{"text": "Short answer."}]) as model:
        status, raw = ask(model, body)
    assert status == 200
    answer = orjson.loads(raw)
    assert answer["object"] == "response" and answer["status"] == "completed" and answer["store"] is False
    (message,) = answer["output"]
    assert message["type"] == "message" and message["content"][0] == {
        "type": "output_text",
        "text": "Short answer.",
        "annotations": [],
    }
    usage = answer["usage"]
    assert usage["input_tokens"] == prompt_tokens("responses", body)
    assert usage["output_tokens"] == reference_tokens("Short answer.")
    assert usage["input_tokens_details"] == {"cached_tokens": 0}
    assert len(PROSE) / usage["input_tokens"] > 3.5  # prose at a real density, not a byte count
    recorded = model.requests[0]
    assert recorded.path == RESPONSES_PATH and recorded.body == body
    assert recorded.headers["authorization"] == "<redacted>"


def test_a_streamed_answer_is_the_typed_event_sequence_ending_with_the_whole_response() -> None:
    step = {"reasoning": "think", "text": "Reading it now.", "tool_calls": [{"name": "read", "arguments": {"a": 1}}]}
    with ScriptedModel([step]) as model:
        status, raw = ask(model, request(stream=True, include=["reasoning.encrypted_content"], tools=[TOOL]))
    assert status == 200
    events = sse_events(raw)
    kinds = [event["type"] for event in events]
    assert kinds[:2] == ["response.created", "response.in_progress"] and kinds[-1] == "response.completed"
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert b"event: response.output_text.delta\n" in raw  # named events, as OpenAI sends them
    text = "".join(e["delta"] for e in events if e["type"] == "response.output_text.delta")
    arguments = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert text == "Reading it now." and arguments == '{"a":1}'
    assert kinds.count("response.output_text.delta") > 1  # several deltas, as a real stream
    final = events[-1]["response"]
    reasoning, message, call = final["output"]
    assert reasoning["type"] == "reasoning" and reasoning["encrypted_content"]
    assert call["type"] == "function_call" and call["call_id"] and call["arguments"] == '{"a":1}'
    assert final["usage"]["output_tokens"] > 0 and message["content"][0]["text"] == text


def test_a_text_cut_at_max_output_tokens_is_an_incomplete_response() -> None:
    with ScriptedModel([{"text": PROSE}, {"text": PROSE}]) as model:
        _, raw = ask(model, request(max_output_tokens=16))
        _, streamed = ask(model, request(max_output_tokens=16, stream=True))
    answer = orjson.loads(raw)
    assert answer["status"] == "incomplete" and answer["incomplete_details"] == {"reason": "max_output_tokens"}
    assert answer["usage"]["output_tokens"] <= 16
    assert sse_events(streamed)[-1]["type"] == "response.incomplete"


def test_the_context_window_is_enforced_with_the_responses_error() -> None:
    body = request(PROSE)
    window = prompt_tokens("responses", body)
    with ScriptedModel([{"text": "fits"}], context_window=window) as model:
        assert ask(model, body)[0] == 200
        status, raw = ask(model, request(PROSE + " more"))
        assert ask(model, request(max_output_tokens=window))[0] == 400  # prompt + requested output
    assert status == 400 and model.rejections == 2 and model.served == 1
    error = orjson.loads(raw)["error"]
    assert error["code"] == "context_length_exceeded" and error["param"] == "input"
    assert error["message"].startswith("Your input exceeds the context window of this model")


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"messages": []}, "unknown parameter 'messages'"),
        ({"max_tokens": 5}, "unknown parameter 'max_tokens'"),
        ({"previous_response_id": "resp_1"}, "previous response with id 'resp_1' not found"),
        ({"tools": [{"type": "function", "function": {"name": "read"}}]}, "tools[0].name is missing"),
        ({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}, "item with id 'rs_1' not found"),
        ({"input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]}, "no tool call found"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "t", "arguments": "{}"}]}, "no tool output"),
        ({"input": [{"role": "user", "content": "x", "_private": 1}]}, "unknown parameter(s) _private"),
        ({"input": []}, "input must be a non-empty"),
        (
            {
                "input": [
                    {"type": "function_call", "call_id": "call_0", "name": "t", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_0", "output": "a"},
                    {"type": "function_call", "call_id": "call_0", "name": "t", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "call_0", "output": "b"},
                ]
            },
            "duplicate call_id 'call_0'",
        ),
    ],
)
def test_what_a_real_responses_server_refuses_is_refused(change: dict[str, Any], problem: str) -> None:
    with ScriptedModel([{"text": "never"}]) as model:
        status, raw = ask(model, {**request(), **change})
    assert status == 400 and model.served == 0
    assert problem in orjson.loads(raw)["error"]["message"]


def test_templates_read_the_last_tool_output_and_user_text_of_the_input() -> None:
    body = request("first")
    body["input"] += [
        {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "file text"},
    ]
    with ScriptedModel([{"text": "{{last_tool_result}} / {{last_user_message}}"}]) as model:
        _, raw = ask(model, body)
    assert orjson.loads(raw)["output"][0]["content"][0]["text"] == "file text / first"


def test_each_response_numbers_its_calls_from_call_0_and_messages_carry_a_phase() -> None:
    calls = {"text": "Looking.", "tool_calls": [{"name": "read"}, {"name": "read"}]}
    with ScriptedModel([calls, calls, {"text": "Done."}, {"text": "Plain.", "phase": None}]) as model:
        answers = [orjson.loads(ask(model, request(tools=[TOOL]))[1]) for _ in range(4)]
    for answer in answers[:2]:
        message, *made = answer["output"]
        assert message["phase"] == "commentary" and [c["call_id"] for c in made] == ["call_0", "call_1"]
    assert answers[2]["output"][0]["phase"] == "final_answer" and "phase" not in answers[3]["output"][0]


def test_a_stream_carries_the_part_and_summary_events_real_streams_do() -> None:
    with ScriptedModel([{"reasoning": "think", "text": "Hi."}]) as model:
        _, raw = ask(model, request(stream=True, include=["reasoning.encrypted_content"]))
    kinds = [event["type"] for event in sse_events(raw)]
    for kind in (
        "response.content_part.added",
        "response.content_part.done",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ):
        assert kind in kinds
