"""Tool call ids are unique across the history: a repeated id is renamed where the reply enters it."""

from __future__ import annotations

import copy
from typing import Any

from i_core.call_ids import history_call_ids, unique_call_ids
from i_core.providers import AnthropicAdapter, OpenAIAdapter


def call(call_id: str, name: str = "read") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": "{}"}}


HISTORY = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "go"},
    {"role": "assistant", "content": None, "tool_calls": [call("call_0"), call("call_1")]},
    {"role": "tool", "tool_call_id": "call_0", "content": "a"},
    {"role": "tool", "tool_call_id": "call_1", "content": "b"},
]


def test_a_reused_id_is_renamed_and_the_original_kept() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [call("call_0"), call("call_1"), call("call_7")]}
    renamed = unique_call_ids(message, history_call_ids(HISTORY))
    assert [c["id"] for c in message["tool_calls"]] == ["call_0_2", "call_1_2", "call_7"]
    assert message["tool_calls"][0]["_original_id"] == "call_0" and "_original_id" not in message["tool_calls"][2]
    assert renamed == {"call_0_2": "call_0", "call_1_2": "call_1"}


def test_an_id_repeated_within_one_reply_and_a_taken_rename_are_kept_apart() -> None:
    taken = history_call_ids([*HISTORY, {"role": "assistant", "tool_calls": [call("call_0_2")]}])
    message = {"role": "assistant", "tool_calls": [call("x"), call("x"), call("call_0")]}
    unique_call_ids(message, taken)
    assert [c["id"] for c in message["tool_calls"]] == ["x", "x_2", "call_0_3"]


def test_unique_ids_are_left_as_they_are() -> None:
    message = {"role": "assistant", "tool_calls": [call("toolu_1")]}
    before = copy.deepcopy(message)
    assert unique_call_ids(message, history_call_ids(HISTORY)) == {} and message == before


def test_the_replayed_anthropic_blocks_follow_the_rename() -> None:
    blocks = [
        {"type": "text", "text": "look"},
        {"type": "tool_use", "id": "call_0", "name": "read", "input": {}},
        {"type": "tool_use", "id": "call_0", "name": "read", "input": {"p": 1}},
    ]
    message = {"role": "assistant", "tool_calls": [call("call_0"), call("call_0")], "_anthropic_content": blocks}
    unique_call_ids(message, history_call_ids(HISTORY))
    assert [b.get("id") for b in blocks] == [None, "call_0_2", "call_0_3"]
    wire = AnthropicAdapter().build_body(
        model="m",
        history=[*HISTORY, message, {"role": "tool", "tool_call_id": "call_0_2", "content": "c"},
                 {"role": "tool", "tool_call_id": "call_0_3", "content": "d"}],
        tools=None, max_tokens=10, use_max_tokens=False, stream=False, extra_body=None,
    )  # fmt: skip
    uses = [b["id"] for m in wire["messages"] for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in wire["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert uses == results == ["call_0", "call_1", "call_0_2", "call_0_3"]


def test_the_original_id_stays_off_the_chat_wire() -> None:
    message = {"role": "assistant", "content": None, "tool_calls": [call("call_0")]}
    unique_call_ids(message, history_call_ids(HISTORY))
    wire = OpenAIAdapter().build_body(
        model="m", history=[*HISTORY, message], tools=None, max_tokens=10, use_max_tokens=False, stream=False,
        extra_body=None,
    )  # fmt: skip
    assert wire["messages"][-1]["tool_calls"] == [call("call_0_2")]


def test_an_id_only_the_archive_holds_is_renamed_past_every_taken_rename() -> None:
    # call_0 was compacted away: the live history holds only its renames; recall still finds call_0.
    live = [{"role": "assistant", "tool_calls": [call("call_0_2")]}, {"role": "tool", "tool_call_id": "call_0_2"}]
    message = {"role": "assistant", "tool_calls": [call("call_0"), call("call_3")]}
    renamed = unique_call_ids(message, history_call_ids(live), frozenset({"call_0", "call_0_3", "call_1"}))
    assert [c["id"] for c in message["tool_calls"]] == ["call_0_4", "call_3"]
    assert renamed == {"call_0_4": "call_0"} and message["tool_calls"][0]["_original_id"] == "call_0"
