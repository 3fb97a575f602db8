"""The history format's one validator and helpers (i_protocol.history)."""

from __future__ import annotations

import pytest

from i_protocol.history import (
    HistoryError,
    check_tool_calls,
    has_images,
    is_attachment,
    is_summary,
    summary_marker,
    text_of,
    validate_history,
)

SYSTEM = {"role": "system", "content": "be brief"}
IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}


def call(call_id: str, name: str = "read", arguments: str = "{}") -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def batch(*ids: str) -> list[dict]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(i) for i in ids]},
        *({"role": "tool", "tool_call_id": i, "content": f"out {i}"} for i in reversed(ids)),
    ]


def test_a_complete_history_with_tool_batches_and_images_is_valid():
    history = [
        SYSTEM,
        {"role": "user", "content": [{"type": "text", "text": "look"}, IMAGE]},
        *batch("a", "b"),
        {"role": "user", "content": [{"type": "text", "text": "Images returned by tool call a:"}, IMAGE]},
        {"role": "assistant", "content": "done"},
    ]
    validate_history(history)


@pytest.mark.parametrize(
    ("history", "message"),
    [
        ([], "non-empty list"),
        ({"role": "system"}, "non-empty list"),
        ([SYSTEM, "hi"], "history[1]: message must be an object"),
        ([SYSTEM, {"role": "robot", "content": "x"}], "unknown role 'robot'"),
        ([{"role": "user", "content": "x"}], "system message must come first"),
        ([SYSTEM, SYSTEM], "system message must come first and only first"),
        ([SYSTEM, {"role": "user", "content": None}], "user message has no content"),
        ([SYSTEM, {"role": "user", "content": 5}], "content must be a string or a list of parts"),
        ([SYSTEM, {"role": "user", "content": [{"type": "audio"}]}], "content[0]: part must be a text or image_url"),
        ([SYSTEM, {"role": "user", "content": [{"type": "text"}]}], "text part has no text"),
        ([SYSTEM, {"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "image_url part has no url"),
        (
            [SYSTEM, {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:image/png,abc"}}]}],
            "image data URL must be base64 encoded",
        ),
        ([SYSTEM, {"role": "assistant", "content": None}], "neither content nor tool calls"),
        ([SYSTEM, {"role": "tool", "tool_call_id": "x", "content": "o"}], "answers no pending tool call"),
        ([SYSTEM, *batch("a")[:1]], "tool call(s) a have no result"),
        ([SYSTEM, *batch("a")[:1], {"role": "user", "content": "next"}], "have no result before this user message"),
    ],
)
def test_each_break_of_the_format_is_named(history, message):
    with pytest.raises(HistoryError) as caught:
        validate_history(history)
    assert message in str(caught.value)


def test_a_pending_final_batch_is_accepted_only_when_asked():
    history = [SYSTEM, {"role": "user", "content": "go"}, batch("a")[0]]
    validate_history(history, allow_pending=True)
    with pytest.raises(HistoryError):
        validate_history(history)


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ([], "non-empty list"),
        (["x"], "must be an object"),
        ([{"type": "function"}], "missing id"),
        ([call("a"), call("a")], "duplicate tool call id 'a'"),
        ([{**call("a"), "type": "tool"}], 'type must be "function"'),
        ([{"id": "a", "type": "function"}], "missing function"),
        ([{"id": "a", "type": "function", "function": {"arguments": "{}"}}], "missing function name"),
        ([{"id": "a", "type": "function", "function": {"name": "f", "arguments": {}}}], "must be a JSON string"),
    ],
)
def test_tool_call_checks_name_the_call(calls, message):
    with pytest.raises(HistoryError) as caught:
        check_tool_calls(calls, "reply")
    assert message in str(caught.value)
    assert str(caught.value).startswith("reply")


def test_check_tool_calls_returns_the_ids_in_order():
    assert check_tool_calls([call("b"), call("a")], "reply") == ["b", "a"]


def test_text_of_joins_text_parts_with_newlines_and_skips_images():
    assert text_of({"role": "user", "content": "plain"}) == "plain"
    parts = [{"type": "text", "text": "first"}, IMAGE, {"type": "text", "text": "second"}]
    assert text_of({"role": "user", "content": parts}) == "first\nsecond"
    assert text_of({"role": "assistant", "content": None}) == ""
    assert text_of({"role": "user", "content": [{"type": "text", "text": 3}, "bare"]}) == ""


def test_images_and_attachments():
    attachment = {"role": "user", "content": [{"type": "text", "text": "Images returned by tool call a:"}, IMAGE]}
    history = [SYSTEM, {"role": "user", "content": "go"}, *batch("a"), attachment, {"role": "user", "content": "x"}]
    assert has_images(attachment) and not has_images(history[1])
    assert is_attachment(history, 4)
    assert not is_attachment(history, 1)  # follows the system message, not a tool result
    assert not is_attachment(history, 5)  # a typed user message carries no images


def test_a_summary_is_the_marked_user_message_not_its_text():
    marked = {"role": "user", "content": "anything", "_compaction": summary_marker()}
    assert is_summary(marked)
    assert not is_summary({"role": "user", "content": "<continuation_summary>x</continuation_summary>"})
    assert not is_summary({"role": "assistant", "content": "x", "_compaction": summary_marker()})
    assert not is_summary({"role": "user", "content": "x", "_compaction": {"cut": 3}})
