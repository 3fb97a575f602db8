from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_budget import budget_result, comparable_estimate, estimate_budget, history_fingerprint
from i_budget.density import BYTES, Rates
from i_budget.estimate import REPLY_OVERHEAD_TOKENS, REQUEST_OVERHEAD_TOKENS
from i_budget.measure import measure_history
from i_protocol import WorkerError

PNG = "data:image/png;base64," + "A" * 40_000


def anchor_for(result: dict[str, Any], input_tokens: int, output_tokens: int) -> dict[str, Any]:
    """What the core stores after a response: the anchor template plus the response's usage."""
    return {**result["anchor"], "input_tokens": input_tokens, "output_tokens": output_tokens}


def wire_bytes(messages: list[dict[str, Any]]) -> int:
    """The documented measure: UTF-8 bytes of the sorted-key compact JSON array of the messages."""
    return len(orjson.dumps(messages, option=orjson.OPT_SORT_KEYS))


# -- the byte estimate ------------------------------------------------------------------


def test_plain_estimate_is_wire_bytes_plus_tools_and_overhead(data):
    result = budget_result(data)
    tools = len(orjson.dumps(data["tools"])) + 30
    assert result["estimate"] == wire_bytes(data["history"]) + tools + REQUEST_OVERHEAD_TOKENS
    assert result["estimate_method"] == "utf8_bytes"
    assert result["fallback_reason"] == "no_usage"
    assert result["fits"] is True


def test_utf8_bytes_not_characters_are_counted(build):
    ascii_result = budget_result(build(history=[{"role": "system", "content": "ab"}], tools=[]))
    cjk_result = budget_result(build(history=[{"role": "system", "content": "你好"}], tools=[]))
    # "你好" is 2 characters but 6 UTF-8 bytes: 4 more than "ab".
    assert cjk_result["estimate"] - ascii_result["estimate"] == 4


def test_private_fields_are_ignored_but_replay_fields_count(build, history_of):
    history = history_of()
    base = budget_result(build(history=history))
    private = copy.deepcopy(history)
    private[2]["_local_note"] = "x" * 5_000
    with_private = budget_result(build(history=private))
    assert with_private["estimate"] == base["estimate"]
    assert with_private["comparable_estimate"] == base["comparable_estimate"]
    assert with_private["anchor"]["prefix_fingerprint"] == base["anchor"]["prefix_fingerprint"]
    replay = copy.deepcopy(history)
    replay[2]["_anthropic_content"] = [{"type": "text", "text": "y" * 5_000}]
    with_replay = budget_result(build(history=replay))
    assert with_replay["estimate"] > base["estimate"] + 5_000
    assert with_replay["anchor"]["prefix_fingerprint"] != base["anchor"]["prefix_fingerprint"]
    responses = copy.deepcopy(history)
    responses[2]["_responses_output"] = [{"type": "reasoning", "summary": []}]
    assert budget_result(build(history=responses))["estimate"] > base["estimate"]


def test_no_tools_costs_nothing_and_tools_cost_their_bytes(build):
    without = budget_result(build(tools=[]))
    assert without["breakdown"]["tool_schema_tokens"] == 0
    big_tool = {"name": "t", "description": "d" * 3_000, "parameters": {"type": "object"}}
    with_tool = budget_result(build(tools=[big_tool]))
    assert with_tool["breakdown"]["tool_schema_tokens"] > 3_000


# -- bad input ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("history", "fragment"),
    [
        ("not a list", "history must be a list"),
        ({"role": "system"}, "history must be a list"),
        (None, "history must be a list"),
        ([], "history is empty"),
        ([{"role": "system", "content": "s"}, "hello"], "history[1] must be an object"),
        ([{"role": "system", "content": "s"}, {"role": "developer", "content": "x"}], "history[1].role 'developer'"),
        ([{"role": "system", "content": "s"}, {"content": "x"}], "history[1].role None"),
    ],
)
def test_bad_history_is_a_clear_error(build, history, fragment):
    data = build()
    data["history"] = history
    with pytest.raises(WorkerError) as info:
        budget_result(data)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("field", "value", "fragment"),
    [
        ("model", None, "model must be a non-empty string"),
        ("model", "", "model must be a non-empty string"),
        ("pending_tool_calls", -1, "pending_tool_calls"),
        ("pending_tool_calls", True, "pending_tool_calls"),
        ("pending_tool_calls", 1.5, "pending_tool_calls"),
        ("pending_tool_calls", 10**9, "pending_tool_calls"),
        ("compact", "yes", "compact must be true or false"),
        ("tools", {"name": "x"}, "tools must be a list"),
        ("tools", [{"description": "no name"}], "tools[0] must be an object with a string name"),
    ],
)
def test_bad_request_fields_are_clear_errors(build, field, value, fragment):
    with pytest.raises(WorkerError) as info:
        budget_result(build(**{field: value}))
    assert fragment in str(info.value)


# -- usage anchoring ----------------------------------------------------------------------


def test_valid_anchor_is_used_for_the_prefix_and_new_content_is_added(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    # The model answered with a tool call, and the tool answered: two new messages.
    reply = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c9", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    }
    result_msg = {"role": "tool", "tool_call_id": "c9", "content": "z" * 1_000}
    grown = [*history, reply, result_msg]
    second = budget_result(build(history=grown, usage=anchor_for(first, 300, 20)))
    assert second["estimate_method"] == "usage_anchor"
    assert second["fallback_reason"] is None
    new_bytes = wire_bytes([result_msg])
    assert second["estimate"] == 300 + 20 + REPLY_OVERHEAD_TOKENS + new_bytes + REQUEST_OVERHEAD_TOKENS
    assert second["breakdown"]["estimated_messages"] == 1
    # The same tools were sent with the anchored request, so their schemas are inside input_tokens.
    assert second["breakdown"]["tool_schema_tokens"] == 0


def test_anchor_without_reply_still_counts_output_tokens(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    second = budget_result(build(history=history, usage=anchor_for(first, 300, 20)))
    assert second["estimate"] == 300 + 20 + REQUEST_OVERHEAD_TOKENS


def test_changed_tools_are_added_on_top_of_the_anchor(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    tools = [{"name": "write", "description": "w" * 500, "parameters": {"type": "object"}}]
    second = budget_result(build(history=history, tools=tools, usage=anchor_for(first, 300, 20)))
    assert second["estimate_method"] == "usage_anchor"
    assert second["breakdown"]["tool_schema_tokens"] > 500
    legacy = {k: v for k, v in anchor_for(first, 300, 20).items() if k != "tools_fingerprint"}
    third = budget_result(build(history=history, usage=legacy))
    assert third["breakdown"]["tool_schema_tokens"] > 0  # unknown tools of the anchor: added again


def test_changed_model_falls_back_to_bytes(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    second = budget_result(build(history=history, model="other", usage=anchor_for(first, 300, 20)))
    assert second["estimate_method"] == "utf8_bytes"
    assert second["fallback_reason"] == "model_changed"
    assert second["estimate"] == first["estimate"]


def test_changed_prefix_falls_back_to_bytes(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    edited = copy.deepcopy(history)
    edited[1]["content"] = "rewritten"
    second = budget_result(build(history=edited, usage=anchor_for(first, 300, 20)))
    assert second["fallback_reason"] == "prefix_changed"
    shorter = budget_result(build(history=history[:3], usage=anchor_for(first, 300, 20)))
    assert shorter["fallback_reason"] == "prefix_changed"
    assert "now has 3" in shorter["fallback_detail"]


def test_private_metadata_does_not_break_the_anchor(build, history_of):
    history = history_of()
    first = budget_result(build(history=history))
    tagged = copy.deepcopy(history)
    tagged[3]["_saved_at"] = "2026-01-01"
    second = budget_result(build(history=tagged, usage=anchor_for(first, 300, 20)))
    assert second["estimate_method"] == "usage_anchor"


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ({"input_tokens": -1}, "usage_invalid"),
        ({"output_tokens": -5}, "usage_invalid"),
        ({"input_tokens": 1.5}, "usage_invalid"),
        ({"input_tokens": "300"}, "usage_invalid"),
        ({"input_tokens": True}, "usage_invalid"),
        ({"input_tokens": 0}, "usage_invalid"),
        ({"input_tokens": None}, "usage_partial"),
        ({"output_tokens": None}, "usage_partial"),
        ({"model": None}, "usage_partial"),
        ({"prefix_fingerprint": None}, "usage_partial"),
        ({"prefix_messages": 0}, "usage_partial"),
        ({"prefix_messages": True}, "usage_partial"),
        ({"input_tokens": 10**18}, "usage_overflow"),
        ({"input_tokens": 600_000_000, "output_tokens": 600_000_000}, "usage_overflow"),
        ({"tools_fingerprint": 7}, "usage_invalid"),
    ],
)
def test_bad_usage_is_a_marked_fallback_never_zero(build, history_of, patch, reason):
    history = history_of()
    first = budget_result(build(history=history))
    usage = {**anchor_for(first, 300, 20), **patch}
    usage = {k: v for k, v in usage.items() if v is not None}
    result = budget_result(build(history=history, usage=usage))
    assert result["estimate_method"] == "utf8_bytes"
    assert result["fallback_reason"] == reason
    assert result["fallback_detail"]
    assert result["estimate"] == first["estimate"] > 0


@pytest.mark.parametrize("usage", ["300", [300, 20], 5])
def test_usage_that_is_not_an_object_falls_back(build, usage):
    result = budget_result(build(usage=usage))
    assert result["fallback_reason"] == "usage_invalid"


def test_anchor_template_fingerprint_matches_prefix_fingerprint(history_of):
    history = history_of()
    for k in range(1, len(history) + 1):
        measured = measure_history(history, k)
        assert measured.prefix_fingerprint == history_fingerprint(history, k)
        assert measured.prefix_fingerprint == measure_history(history[:k]).fingerprint


# -- images ------------------------------------------------------------------------------


def image_message() -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "text", "text": "what is this?"}, {"type": "image_url", "image_url": {"url": PNG}}],
    }


def test_images_without_image_tokens_do_not_fit_and_say_why(build, history_of):
    result = budget_result(build(history=[*history_of(), image_message()]))
    assert result["fits"] is False
    assert result["images"]["unplanned"] == 1
    assert any("image_tokens" in reason for reason in result["reasons"])
    # The base64 payload is not counted as text.
    assert result["estimate"] < 40_000


def test_images_with_image_tokens_cost_exactly_that(build, history_of):
    history = [*history_of(), image_message()]
    budget = {"context_window": 100_000, "image_tokens": 1_500}
    result = budget_result(build(history=history, budget=budget))
    assert result["fits"] is True
    assert result["breakdown"]["image_tokens"] == 1_500
    plain = budget_result(build(history=history_of(), budget=budget))
    text_only = wire_bytes([{"role": "user", "content": [{"type": "text", "text": "what is this?"}]}])
    assert result["estimate"] - plain["estimate"] < text_only + 1_500 + 30


def test_replay_images_are_found_in_private_replay_blocks(build, history_of):
    message = {
        "role": "user",
        "content": "see",
        "_anthropic_content": [
            {"type": "tool_result", "content": [{"type": "image", "source": {"type": "base64", "data": "B" * 9_000}}]}
        ],
    }
    result = budget_result(build(history=[*history_of(), message]))
    assert result["images"]["count"] == 1
    assert result["fits"] is False


def test_images_inside_the_anchored_prefix_are_covered_by_usage(build, history_of):
    history = [*history_of(), image_message()]
    first = budget_result(build(history=history, budget={"context_window": 100_000, "image_tokens": 800}))
    assert first["fits"] is True
    grown = [*history, {"role": "assistant", "content": "a cat"}, {"role": "user", "content": "thanks"}]
    second = budget_result(build(history=grown, usage=anchor_for(first, 2_000, 10)))
    assert second["estimate_method"] == "usage_anchor"
    assert second["fits"] is True  # no image_tokens needed: the image's cost is in the real usage
    third = budget_result(build(history=[*grown, image_message()], usage=anchor_for(first, 2_000, 10)))
    assert third["fits"] is False and third["images"]["unplanned"] == 1


# -- fits, trigger, recommendation ------------------------------------------------------------


def test_over_capacity_does_not_fit_and_recommends_compaction(build, history_of):
    history = history_of(turns=40, size=300)
    result = budget_result(build(history=history, budget={"context_window": 20_000}))
    assert result["estimate"] > result["capacity"]
    assert result["fits"] is False
    assert any("exceeds the input capacity" in reason for reason in result["reasons"])
    assert result["recommend_compact"] is True
    hint = result["recommended_cut_hint"]
    assert hint is not None and 2 <= hint < len(history)
    assert history[hint]["role"] in ("user", "assistant")
    assert comparable_estimate(history[hint:]) <= result["trigger"] // 2


def test_over_trigger_but_fitting_recommends_compaction(build, history_of):
    history = history_of(turns=10, size=300)
    estimate = budget_result(build(history=history))["estimate"]
    budget = {"context_window": 100_000, "threshold": estimate - 10}
    result = budget_result(build(history=history, budget=budget))
    assert result["fits"] is True and result["over_trigger"] is True and result["recommend_compact"] is True
    below = budget_result(build(history=history, budget={"context_window": 100_000, "threshold": estimate + 1}))
    assert below["over_trigger"] is False and below["recommend_compact"] is False
    assert below["recommended_cut_hint"] is None


def test_no_recommendation_when_compact_is_false(build, history_of):
    history = history_of(turns=40, size=300)
    result = budget_result(build(history=history, budget={"context_window": 20_000}, compact=False))
    assert result["over_trigger"] is True
    assert result["recommend_compact"] is False


# -- comparable estimate ---------------------------------------------------------------------


def test_comparable_estimate_depends_on_content_only(build, history_of):
    history = history_of()
    base = budget_result(build(history=history))
    first = base
    other = budget_result(
        build(
            history=history,
            model="m2",
            tools=[],
            pending_tool_calls=3,
            usage=anchor_for(first, 10, 1),
            budget={"context_window": 50_000},
        )
    )
    assert other["comparable_estimate"] == base["comparable_estimate"] == comparable_estimate(history)
    assert base["comparable_estimate"] == wire_bytes(history)


def test_compacted_candidate_has_a_smaller_comparable_estimate(history_of):
    history = history_of(turns=10)
    candidate = [
        history[0],
        {"role": "user", "content": "<continuation_summary>short</continuation_summary>"},
        *history[-4:],
    ]
    assert comparable_estimate(candidate) < comparable_estimate(history)


# -- tool output budgets ---------------------------------------------------------------------


def test_tool_output_budget_is_capped_by_the_ratio(build):
    result = budget_result(build(pending_tool_calls=2))
    budget = result["tool_output_budget"]
    assert budget["per_call_cap_tokens"] == 2_000  # 100000 * 0.02
    assert budget["per_call_tokens"] == 2_000
    assert budget["total_tokens"] == 4_000
    assert budget["per_call_bytes"] == 2_000 and budget["per_call_chars"] == 500


def test_tool_output_budget_splits_the_remaining_room(build, history_of):
    history = history_of(turns=5)
    probe = budget_result(build(history=history))
    window = 100_000
    reserve = window - 2_000 - probe["estimate"] - 3_000  # leave 3000 tokens of room
    budget = {"context_window": window, "output_reserve": reserve, "tool_output_ratio": 0.5}
    result = budget_result(build(history=history, budget=budget, pending_tool_calls=4))
    assert result["remaining"] == 3_000
    assert result["tool_output_budget"]["per_call_tokens"] == 750
    none_left = budget_result(
        build(history=history_of(turns=40, size=300), budget={"context_window": 20_000}, pending_tool_calls=2)
    )
    assert none_left["tool_output_budget"]["per_call_tokens"] == 0


def test_output_keeps_every_input_field(build, monkeypatch):
    from i_budget import worker
    from i_budget.observations import MemoryStore

    monkeypatch.setattr(worker, "_memory", MemoryStore())
    data = build(extra_field={"kept": True}, cut=None, origin="http://127.0.0.1:1")
    before = copy.deepcopy(data)
    out = worker.context_budget(data, request=None)
    for key, value in before.items():
        assert out[key] == value
    result = out["budget_result"]
    assert result["estimate"] == budget_result(before)["estimate"]  # nothing learned yet: the byte estimate
    assert result["density"]["rule"] == "per_class"
    assert result["density"]["fallback_classes"] == ["word", "id", "symbol", "other"]
    assert result["density"]["observed"] == [] and result["anchor"]["classes"]


# -- properties ----------------------------------------------------------------------------

text = st.text(min_size=0, max_size=200)
messages = st.lists(
    st.one_of(
        st.builds(lambda t: {"role": "user", "content": t}, text),
        st.builds(lambda t: {"role": "assistant", "content": t}, text),
        st.builds(lambda t, p: {"role": "tool", "tool_call_id": "x", "content": t, "_meta": p}, text, text),
    ),
    max_size=12,
)


@settings(max_examples=150, deadline=None)
@given(body=messages, system=text)
def test_plain_estimate_never_undercounts_utf8_bytes(body, system):
    history = [{"role": "system", "content": system}, *body]
    outcome = estimate_budget(
        {"model": "m", "budget": {"context_window": 10_000_000}, "max_tokens": 10, "history": history, "tools": []}
    )
    content_bytes = sum(len((m.get("content") or "").encode()) for m in history)
    assert outcome.result["estimate"] >= content_bytes + len(history)
    assert outcome.result["comparable_estimate"] >= content_bytes
    assert outcome.result["estimate"] > 0


@settings(max_examples=100, deadline=None)
@given(body=messages, cut=st.integers(1, 13))
def test_split_measure_matches_whole_measure(body, cut):
    history = [{"role": "system", "content": "s"}, *body]
    cut = min(cut, len(history))
    whole = measure_history(history)
    split = measure_history(history, cut)
    assert split.fingerprint == whole.fingerprint
    assert (
        split.total_bytes
        == whole.total_bytes
        == wire_bytes([{k: v for k, v in m.items() if k != "_meta"} for m in history])
    )
    assert split.prefix_fingerprint == history_fingerprint(history, cut)
    assert split.prefix_bytes == wire_bytes([{k: v for k, v in m.items() if k != "_meta"} for m in history[:cut]])


# -- implausible usage ------------------------------------------------------------------------


def test_an_impossible_input_count_is_neither_used_nor_learned(build, history_of):
    """prompt_tokens 2,000,000 for a few hundred bytes: one bad reply must not brick the session."""
    history = history_of()
    first = budget_result(build(history=history))
    poisoned = anchor_for(first, 2_000_000, 20)
    second = budget_result(build(history=history, usage=poisoned))
    assert second["fallback_reason"] == "usage_implausible"
    assert "2000000 input tokens" in second["fallback_detail"]
    assert second["estimate"] == first["estimate"]
    assert second["fits"] is True
    learned: list = []

    def learn(seen: list) -> Rates:
        learned.extend(seen)
        return BYTES

    estimate_budget(build(history=history, usage=poisoned), learn=learn)
    assert learned == []


def test_an_anchor_of_many_more_tools_than_are_offered_now_is_dropped(build, history_of):
    """A server offering 20,000 tools made a huge anchor; once it is gone the anchor cannot stay."""
    history = history_of()
    many = [{"name": f"t{n}", "description": "d" * 200, "parameters": {"type": "object"}} for n in range(2_000)]
    first = budget_result(build(history=history, tools=many))
    huge = anchor_for(first, first["estimate"] // 3, 20)  # a real density over the 2,000 schemas
    with_them = budget_result(build(history=history, tools=many, usage=huge))
    assert with_them["estimate_method"] == "usage_anchor"
    without = budget_result(build(history=history, tools=[], usage=huge))
    assert without["fallback_reason"] == "usage_implausible"
    assert without["estimate"] < 10_000
