"""What each event's hooks must answer: one checker per event in ``hook_results.CHECKS``."""

from __future__ import annotations

import re

import pytest

from i_core.errors import HookResultError, ModelError
from i_core.events import EVENTS
from i_core.hook_results import (
    CHECKS,
    MAX_CHUNKS,
    CompactPlan,
    RequestChange,
    Revision,
    SummaryRequest,
    ToolResult,
)

PNG = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
HISTORY = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u1"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "r"},
    {"role": "user", "content": "u2"},
]
REQUEST = {"prompt": "summarise", "messages": [{"role": "user", "content": "x"}]}


def test_every_event_and_the_tool_call_have_a_checker():
    assert set(CHECKS) == {*EVENTS, "tool"}


@pytest.mark.parametrize(
    "event, answer, sent, expected",
    [
        ("system_prompt", {"prompt": "be brief"}, {}, "be brief"),
        ("user_input", {}, {"content": "hi"}, "hi"),
        (
            "user_input",
            {"content": [{"type": "text", "text": "hi"}]},
            {"content": "x"},
            [{"type": "text", "text": "hi"}],
        ),
        ("before_tool", {"arguments": "{}"}, {"name": "read", "arguments": "{bad"}, ("read", "{}")),
        ("tool_approval", {"decision": "deny"}, {"decision": "ask"}, "deny"),
        ("tool", {"output": "ok"}, {}, ToolResult("ok", [])),
        ("after_tool", {"output": "new"}, {"output": "old", "images": [1]}, ToolResult("new", [1])),
        ("after_tool", {"images": None}, {"output": "old", "images": [1]}, ToolResult("old", [])),
        ("compact_plan", {"cut": 4, "state": {"a": 1}}, {"history": HISTORY}, CompactPlan(4, {"a": 1}, "")),
        (
            "compact_plan",
            {"cut": None, "reason": "nothing_to_cut", "detail": "too short"},
            {"history": HISTORY, "state": {"s": 1}},
            CompactPlan(None, {"s": 1}, "nothing_to_cut: too short"),
        ),
        ("compact_plan", {"cut": None}, {"history": HISTORY}, CompactPlan(None, {}, "compactor declined")),
        ("after_compact", {"summary": "done"}, {"state": {"s": 1}}, Revision({"s": 1}, "done", None)),
        (
            "after_compact",
            {"request": REQUEST, "state": {"t": 2}},
            {},
            Revision({"t": 2}, None, SummaryRequest("summarise", REQUEST["messages"])),
        ),
        (
            "before_request",
            {"url": "http://m:1/v1/other", "body": {"a": 1}},
            {"url": "http://m:1/v1/chat"},
            RequestChange("http://m:1/v1/other", {"a": 1}, {}),
        ),
        ("finish", {"anything": 1}, {}, None),
        ("session_load", {"messages": HISTORY}, {"messages": []}, HISTORY),
        ("before_compact_commit", {}, {"messages": HISTORY}, HISTORY),
    ],
)
def test_a_valid_answer_gives_the_typed_result(event, answer, sent, expected):
    assert CHECKS[event](answer, sent) == expected


@pytest.mark.parametrize(
    "event, answer, sent, problem, check",
    [
        ("system_prompt", {"prompt": "  "}, {}, "returned no non-empty prompt", None),
        ("user_input", {"content": 5}, {}, "neither text nor a list of parts", None),
        ("before_tool", {"name": 1}, {"arguments": "{}"}, "name or arguments that are not strings", None),
        ("tool_approval", {"decision": "yes"}, {}, "decision 'yes', which is not allow/ask/deny", None),
        ("tool_approval", {}, {}, "decision None", None),
        ("tool", {"output": 3}, {}, "returned no text output", None),
        ("after_tool", {"output": None}, {"output": "x"}, "returned no text output", None),
        ("before_turn", {"context": []}, {}, "context that is not an object", None),
        ("before_turn", {"context": {"memory": {"entries": 1}}}, {}, "context.memory that is not an object", None),
        ("before_turn", {"append": {}}, {}, "append that is not a list", None),
        ("before_turn", {"append": [{"role": "assistant", "content": "x", "_steering": "1"}]}, {}, "_steering", None),
        ("context_budget", {"budget_result": {"fits": "yes"}}, {}, "boolean 'fits'", None),
        ("compact_plan", {"cut": True}, {"history": HISTORY}, r"invalid cut True \(need 2 <= cut < 5\)", "invalid_cut"),
        ("compact_plan", {"cut": 5}, {"history": HISTORY}, "invalid cut 5", "invalid_cut"),
        (
            "compact_plan",
            {"cut": 3},
            {"history": HISTORY},
            "cut 3, a 'tool' message inside a tool batch",
            "invalid_cut",
        ),
        ("before_compact", {"summary": ""}, {}, "empty or non-text local summary", "summary_reply_invalid"),
        ("before_compact", {"prompt": "p"}, {}, "neither a local summary nor a prompt", "summary_reply_invalid"),
        ("before_compact", {"chunks": []}, {}, f"list of 1 to {MAX_CHUNKS}", "summary_reply_invalid"),
        ("before_compact", {"chunks": [REQUEST, {}]}, {}, r"in chunks\[1\] neither", "summary_reply_invalid"),
        ("before_compact", {**REQUEST, "max_tokens": 0}, {}, "max_tokens 0, not a positive", "summary_reply_invalid"),
        (
            "before_compact",
            {**REQUEST, "summary_images": "x"},
            {},
            "summary_images that are not a list",
            "summary_reply_invalid",
        ),
        (
            "before_compact",
            {**REQUEST, "retained_images": [{"type": "text"}]},
            {},
            "invalid retained_images",
            "invalid_candidate",
        ),
        ("after_compact", {"summary": None}, {}, "empty or non-text summary", "summary_reply_invalid"),
        ("after_compact", {"request": {"prompt": ""}}, {}, "a request with neither", "summary_reply_invalid"),
        (
            "before_compact_commit",
            {"messages": HISTORY[1:]},
            {"messages": HISTORY},
            "invalid history: history",
            "invalid_candidate",
        ),
        ("before_save", {"messages": []}, {"messages": HISTORY}, "returned an invalid history", None),
        ("session_load", {"messages": "x"}, {"messages": HISTORY}, "returned an invalid history", None),
        ("before_request", {"url": "http://m:1/v1", "body": []}, {"url": "http://m:1/v1"}, "no body object", None),
        ("before_request", {"body": {}, "request_meta": 1}, {"url": "http://m:1/v1"}, "request_meta that is not", None),
    ],
)
def test_an_answer_that_breaks_the_contract_says_what_it_returned(event, answer, sent, problem, check):
    with pytest.raises(HookResultError, match=problem) as info:
        CHECKS[event](answer, sent)
    assert info.value.check == check
    # The message completes "worker W ...": it starts with what the worker did.
    assert str(info.value).startswith(("returned ", "answered "))


def test_before_compact_gives_a_local_summary_or_the_requests_in_order():
    local = CHECKS["before_compact"](
        {"summary": "s", "retained_images": [{"type": "image_url", "image_url": {"url": PNG, "x": 1}}]}, {}
    )
    assert local.summary == "s" and local.requests == ()
    assert local.retained_images == [{"type": "image_url", "image_url": {"url": PNG}}]  # rebuilt: only the URL
    chunks = CHECKS["before_compact"](
        {"chunks": [REQUEST, {**REQUEST, "prompt": "second"}], "max_tokens": 100}, {"state": {"k": 1}}
    )
    assert [r.prompt for r in chunks.requests] == ["summarise", "second"]
    assert chunks.summary is None and chunks.max_tokens == 100 and chunks.state == {"k": 1}
    single = CHECKS["before_compact"](REQUEST, {})
    assert single.requests == (SummaryRequest("summarise", REQUEST["messages"]),)


def test_before_turn_rebuilds_steering_messages_with_only_their_fields():
    additions = CHECKS["before_turn"](
        {
            "context": {"memory": {"entries": {}}},
            "append": [{"role": "user", "content": "stop", "_steering": "7", "x": 1}],
        },
        {},
    )
    assert additions.append == [{"role": "user", "content": "stop", "_steering": "7"}]
    assert additions.context == {"memory": {"entries": {}}}


def test_a_budget_answer_never_preselects_a_cut():
    check = CHECKS["context_budget"]({"budget_result": {"fits": False, "capacity": 9}, "cut": 4}, {})
    assert check.output["cut"] is None and check.verdict.fits is False and check.verdict.capacity == 9


def test_a_before_request_that_changes_the_origin_is_refused_as_a_model_error():
    with pytest.raises(ModelError, match="tried to change the request origin to 'http://evil:1/v1'; refused"):
        CHECKS["before_request"]({"url": "http://evil:1/v1", "body": {}}, {"url": "http://m:1/v1"})


def test_a_history_the_answer_did_not_touch_is_not_validated_again():
    own = [{"role": "user", "content": "not first"}]  # invalid, but it is the very list the core sent
    assert CHECKS["before_save"]({"messages": own}, {"messages": own}) is own
    with pytest.raises(HookResultError):
        CHECKS["before_save"]({"messages": list(own)}, {"messages": own})


def test_a_tool_answer_may_report_its_failure_as_a_result():
    assert CHECKS["tool"]({"output": "boom", "is_error": True}, {}) == ToolResult("boom", [], is_error=True)
    with pytest.raises(HookResultError, match="returned is_error 'yes', not true or false"):
        CHECKS["tool"]({"output": "boom", "is_error": "yes"}, {})


def test_tools_list_gives_the_announced_schemas_with_only_their_model_facing_fields():
    tool = {"name": "mcp__s__t", "description": "d", "parameters": {"type": "object"}, "exec": ["/bin/sh"]}
    assert CHECKS["tools_list"]({"tools": [tool]}, {"tools": []}) == (
        {"name": "mcp__s__t", "description": "d", "parameters": {"type": "object"}},
    )
    assert CHECKS["tools_list"]({}, {"tools": []}) == ()


@pytest.mark.parametrize(
    "tools, problem",
    [
        ({"name": "x"}, "returned tools that are not a list"),
        ([{"name": "a.b", "parameters": {"type": "object"}}], "announced tools[0] with name 'a.b', not 1-64"),
        ([{"name": "x" * 65, "parameters": {"type": "object"}}], "not 1-64 characters"),
        ([{"name": "shell", "parameters": {"type": "object"}}], "would shadow the built-in tool"),
        ([{"name": "t", "parameters": {"type": "object"}}] * 2, "announced tool 't' twice"),
        ([{"name": "t", "parameters": {"type": "string"}}], 'parameters are not a JSON schema with "type": "object"'),
        ([{"name": "t", "description": 3, "parameters": {"type": "object"}}], "a description that is not a string"),
    ],
)
def test_a_tools_list_answer_that_breaks_the_rules_is_refused(tools, problem):
    with pytest.raises(HookResultError, match=re.escape(problem)):
        CHECKS["tools_list"]({"tools": tools}, {"tools": []})
