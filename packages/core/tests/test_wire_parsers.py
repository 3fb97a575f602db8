"""Every wire parser meets model data of any type with the clean invalid-event error, never a crash.

The named cases are the chunks that once crashed the core (exit 1, "this is a bug"); the fuzzers
replace one field anywhere in a valid stream (or body) with a JSON value of any type and check that
only the expected error type comes out: no AttributeError, TypeError or KeyError from model data.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from i_core.bundled.responses import history_reply
from i_core.errors import HookResultError, ProviderError
from i_core.providers import AnthropicAdapter, OpenAIAdapter, ResponsesAdapter
from i_core.providers.worker import _reply as provider_reply

FUZZ = settings(max_examples=150, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])

CALL = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "read", "arguments": ""}}
OPENAI_STREAM: list[dict[str, Any]] = [
    {"id": "c1", "model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": "Hi"}}]},
    {"choices": [{"index": 0, "delta": {"content": [{"type": "text", "text": " there"}]}}]},
    {"choices": [{"index": 0, "delta": {"reasoning_content": "hm", "refusal": None}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [CALL]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"path":'}}]}}]},
    {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '"a"}'}}]}}]},
    {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    {
        "choices": [],
        "usage": {"prompt_tokens": 10, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 0}},
    },
]
ANTHROPIC_STREAM: list[dict[str, Any]] = [
    {"type": "message_start", "message": {"id": "m1", "model": "c", "usage": {"input_tokens": 10, "output_tokens": 1}}},
    {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hm"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "signature_delta", "signature": "s"}},
    {"type": "content_block_stop", "index": 0},
    {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
    {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Hi"}},
    {"type": "content_block_stop", "index": 1},
    {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "t1", "name": "read", "input": {}},
    },
    {"type": "content_block_delta", "index": 2, "delta": {"type": "input_json_delta", "partial_json": '{"path": "a"}'}},
    {"type": "content_block_stop", "index": 2},
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
    {"type": "message_stop"},
]
_MESSAGE = {"type": "message", "id": "msg_1", "role": "assistant", "phase": "commentary", "content": []}
_FUNCTION = {"type": "function_call", "id": "fc_1", "call_id": "call_0", "name": "read", "arguments": ""}
RESPONSES_STREAM: list[dict[str, Any]] = [
    {"type": "response.created", "response": {"id": "r1", "object": "response", "status": "in_progress", "output": []}},
    {
        "type": "response.output_item.added",
        "output_index": 0,
        "item": {"type": "reasoning", "id": "rs_1", "summary": []},
    },
    {
        "type": "response.output_item.done",
        "output_index": 0,
        "item": {"type": "reasoning", "id": "rs_1", "summary": []},
    },
    {"type": "response.output_item.added", "output_index": 1, "item": _MESSAGE},
    {
        "type": "response.content_part.added",
        "output_index": 1,
        "content_index": 0,
        "part": {"type": "output_text", "text": ""},
    },
    {"type": "response.output_text.delta", "output_index": 1, "content_index": 0, "delta": "Hi"},
    {"type": "response.output_text.done", "output_index": 1, "content_index": 0, "text": "Hi"},
    {"type": "response.output_item.added", "output_index": 2, "item": _FUNCTION},
    {"type": "response.function_call_arguments.delta", "output_index": 2, "delta": '{"path": "a"}'},
    {"type": "response.function_call_arguments.done", "output_index": 2, "arguments": '{"path": "a"}'},
    {
        "type": "response.completed",
        "response": {
            "id": "r1",
            "object": "response",
            "status": "completed",
            "output": [
                {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "x"},
                {
                    **_MESSAGE,
                    "status": "completed",
                    "content": [{"type": "output_text", "text": "Hi", "annotations": []}],
                },
                {**_FUNCTION, "arguments": '{"path": "a"}', "status": "completed"},
            ],
            "usage": {"input_tokens": 10, "output_tokens": 3, "input_tokens_details": {"cached_tokens": 0}},
        },
    },
]
PROVIDER_REPLY: dict[str, Any] = {
    "message": {"role": "assistant", "content": "Hi", "tool_calls": [{k: v for k, v in CALL.items() if k != "index"}]},
    "finish_reason": "tool_calls",
    "usage": {"input_tokens": 10, "output_tokens": 2, "cache_read_tokens": 0},
    "response": {},
}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6,
)


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a field or list item inside ``value``."""
    found = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, child in items:
        found.append((*prefix, key))
        found.extend(paths(child, (*prefix, key)))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    copied = copy.deepcopy(value)
    target = copied
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copied


def feed_all(adapter: Any, events: list[dict[str, Any]]) -> Any:
    parser = adapter.stream_parser(lambda _text: None)
    for event in events:
        parser.feed(event)
    if isinstance(adapter, ResponsesAdapter):
        return adapter.parse_response(history_reply(parser.raw()))
    return parser.finish(ended=True)


def test_the_valid_streams_parse() -> None:
    assert feed_all(OpenAIAdapter(), OPENAI_STREAM).message["tool_calls"][0]["function"]["arguments"] == '{"path":"a"}'
    assert feed_all(AnthropicAdapter(), ANTHROPIC_STREAM).message["tool_calls"][0]["id"] == "t1"
    assert feed_all(ResponsesAdapter(), RESPONSES_STREAM).message["content"] == "Hi"
    assert provider_reply(PROVIDER_REPLY).finish_reason == "tool_calls"


OPENAI_CRASHES = {
    "delta is a string": {"choices": [{"index": 0, "delta": "hi"}]},
    "tool_calls is an object": {"choices": [{"index": 0, "delta": {"tool_calls": {"index": 0}}}]},
    "tool_calls holds null": {"choices": [{"index": 0, "delta": {"tool_calls": [None]}}]},
    "function is a string": {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": "read"}]}}]},
    "finish_reason is a number": {"choices": [{"index": 0, "delta": {}, "finish_reason": 1}]},
}


@pytest.mark.parametrize("event", OPENAI_CRASHES.values(), ids=OPENAI_CRASHES.keys())
def test_openai_chunks_of_the_wrong_type_are_an_invalid_event(event: dict[str, Any]) -> None:
    with pytest.raises(ProviderError, match="model sent an invalid event"):
        feed_all(OpenAIAdapter(), [event])


def test_openai_tool_call_indexes_0_and_string_1_are_an_invalid_event() -> None:
    first = {"choices": [{"index": 0, "delta": {"tool_calls": [CALL]}}]}
    second = {"choices": [{"index": 0, "delta": {"tool_calls": [{**CALL, "index": "1", "id": "call_2"}]}}]}
    with pytest.raises(ProviderError, match=r"tool_calls\[0\]\.index is a string, not a non-negative integer"):
        feed_all(OpenAIAdapter(), [first, second])


_START = ANTHROPIC_STREAM[0]
_TEXT = {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
ANTHROPIC_CRASHES = {
    "message is a list": [{"type": "message_start", "message": [1]}],
    "delta is a string": [_START, _TEXT, {"type": "content_block_delta", "index": 0, "delta": "x"}],
    "text_delta.text is 42": [
        _START,
        _TEXT,
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 42}},
    ],
    "block indexes 0 and '1'": [_START, _TEXT, {**_TEXT, "index": "1"}],
    "start text is a list": [
        _START,
        {**_TEXT, "content_block": {"type": "text", "text": []}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}},
    ],
}


@pytest.mark.parametrize("events", ANTHROPIC_CRASHES.values(), ids=ANTHROPIC_CRASHES.keys())
def test_anthropic_events_of_the_wrong_type_are_an_invalid_event(events: list[dict[str, Any]]) -> None:
    tail = [{"type": "message_delta", "delta": {"stop_reason": "end_turn"}}, {"type": "message_stop"}]
    with pytest.raises(ProviderError, match="model sent an invalid event"):
        feed_all(AnthropicAdapter(), [*events, *tail])


def test_responses_text_of_the_wrong_type_is_refused() -> None:
    response = copy.deepcopy(RESPONSES_STREAM[-1]["response"])
    response["output"][1]["content"][0]["text"] = 42
    with pytest.raises(ProviderError, match="output_text part whose text is not a string"):
        ResponsesAdapter().parse_response(history_reply(response))


def _fuzzed(stream: list[dict[str, Any]]) -> Any:
    # Each event stays an object: the transport refuses one that is not before any parser sees it.
    inside = [path for path in paths(stream) if len(path) > 1]
    return st.sampled_from(inside).flatmap(lambda path: json_values.map(lambda value: replaced(stream, path, value)))


@FUZZ
@given(_fuzzed(OPENAI_STREAM))
def test_fuzzed_chat_completions_streams_never_crash(events: list[dict[str, Any]]) -> None:
    try:
        feed_all(OpenAIAdapter(), events)
    except ProviderError:
        pass


@FUZZ
@given(
    _fuzzed(
        [
            {
                "choices": [
                    {
                        "index": 0,
                        "message": {**OPENAI_STREAM[0]["choices"][0]["delta"], "tool_calls": [CALL]},
                        "finish_reason": "stop",
                    }
                ],
                "usage": OPENAI_STREAM[-1]["usage"],
            }
        ]
    )
)
def test_fuzzed_chat_completions_bodies_never_crash(bodies: list[dict[str, Any]]) -> None:
    try:
        OpenAIAdapter().parse_response(bodies[0])
    except ProviderError:
        pass


@FUZZ
@given(_fuzzed(ANTHROPIC_STREAM))
def test_fuzzed_anthropic_streams_never_crash(events: list[dict[str, Any]]) -> None:
    try:
        feed_all(AnthropicAdapter(), events)
    except ProviderError:
        pass


@FUZZ
@given(_fuzzed(RESPONSES_STREAM))
def test_fuzzed_responses_streams_never_crash(events: list[dict[str, Any]]) -> None:
    try:
        feed_all(ResponsesAdapter(), events)
    except ProviderError:
        pass


@FUZZ
@given(_fuzzed([PROVIDER_REPLY]))
def test_fuzzed_provider_replies_never_crash(replies: list[dict[str, Any]]) -> None:
    try:
        provider_reply(replies[0])
    except HookResultError:
        pass
