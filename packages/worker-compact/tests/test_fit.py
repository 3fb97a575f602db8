"""A cut that fits (budget_result.cut_estimates) and the second plan (previous_attempt), in process."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, system, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st
from test_plan import histories

from i_compact.actions import statement_size
from i_compact.allowance import CANONICAL_BYTES, SECTIONS_DENSITY, SQUEEZE_SHARE, bounds_for_prefix, statement_room
from i_compact.fit import CutEstimates, FitBudget, fit_cut, newest_real_user
from i_compact.history import approx_size, boundaries
from i_compact.plan import choose_cut, is_valid_cut
from i_compact.worker import worker

RATE = 0.25
FIXED = 100
RESERVE = 256  # = the smallest planned summary: the allowance is the whole reserve (see the last tests)


def call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    return worker.handle({"id": 1, "event": event, "data": data, "paths": dirs})


def cost(message: dict[str, Any]) -> int:
    return math.ceil(len(json.dumps(message).encode()) * RATE)


def estimates(history: list[dict[str, Any]], *, rate: float = RATE, fixed: int = FIXED) -> dict[str, Any]:
    """What the budget worker sends: the suffix estimate of every user/assistant index >= 2."""
    suffix = []
    running = 0
    for index in range(len(history) - 1, 1, -1):
        running += cost(history[index])
        if history[index]["role"] in ("user", "assistant"):
            suffix.append([index, running])
    suffix.reverse()
    return {"fixed_tokens": fixed, "tokens_per_byte": rate, "suffix": suffix}


def budget_result(history: list[dict[str, Any]], capacity: int, **extra: Any) -> dict[str, Any]:
    return {
        "fits": False,
        "estimate": capacity + 500,
        "comparable_estimate": capacity + 400,
        "trigger": capacity - 1000,
        "capacity": capacity,
        "output_reserve": RESERVE,
        "recommend_compact": True,
        "cut_estimates": estimates(history),
        **extra,
    }


def plan(dirs: dict[str, str], history: list[dict[str, Any]], result: dict[str, Any], **extra: Any) -> dict[str, Any]:
    data = {"model": "m", "budget": {}, "history": history, "tools": [], "cut": None, "budget_result": result}
    response = call("compact_plan", {**data, **extra}, dirs)
    assert "data" in response, response
    return response["data"]


def suffix_of(history: list[dict[str, Any]], cut: int) -> int:
    return dict(estimates(history)["suffix"])[cut]


def model_allowance() -> int:
    return RESERVE + math.ceil(CANONICAL_BYTES * RATE)


def small_history() -> list[dict[str, Any]]:
    # 0 sys, 1 u1, 2 a, 3 a, 4 u2, 5 a, 6 a, 7 u3 (newest real user), 8 a, 9 a
    return [
        system(),
        user("Port the lexer."),
        assistant("a1"),
        assistant("a2"),
        user("Also the parser."),
        assistant("a3"),
        assistant("a4"),
        user("And the docs."),
        assistant("a5"),
        assistant("a6"),
    ]


def test_keep_recent_is_kept_when_its_candidate_fits(dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text('{"model_sections": false}')
    history = small_history()
    without = plan(dirs, history, {**budget_result(history, 100000), "cut_estimates": None})
    data = plan(dirs, history, budget_result(history, 100000))
    assert data["cut"] == without["cut"] == 4 and len(history) - data["cut"] >= 4
    attempt = data["state"]["lastAttempt"]
    assert attempt["reason"] == "recommended" and attempt["cutEstimates"] == "present"
    candidate = attempt["fit"]["keepRecentCandidate"]
    assert candidate["candidateTokens"] == FIXED + model_allowance() + suffix_of(history, 4) <= 100000
    assert data["state"]["request"] == {"capacity": 100000, "output_reserve": RESERVE, "tokens_per_byte": RATE}


def test_keep_recent_reduced_when_only_a_later_cut_fits(dirs: dict[str, str]) -> None:
    # The huge assistant message (index 5) sits inside the last keep_recent messages' reach:
    # only a cut past it, at the newest real user message, fits.
    history = [
        system(),
        user("Port the lexer."),
        assistant("a1"),
        assistant("a2"),
        user("Also the parser."),
        assistant("x" * 40000),
        user("And the docs."),
        assistant("a5"),
        assistant("a6"),
    ]
    capacity = FIXED + model_allowance() + suffix_of(history, 6) + 10
    data = plan(dirs, history, budget_result(history, capacity))
    assert data["cut"] == 6 and history[6]["content"] == "And the docs."
    assert len(history) - data["cut"] < 4  # keep_recent (4) could not be kept
    attempt = data["state"]["lastAttempt"]
    assert attempt["status"] == "planned" and attempt["reason"] == "keep_recent_reduced"
    fit = attempt["fit"]
    assert fit["keepRecentCut"] == 4 and fit["keepRecentCandidate"]["candidateTokens"] > capacity
    assert fit["chosenCandidate"] == {
        "cut": 6,
        "suffixTokens": suffix_of(history, 6),
        "summaryAllowance": model_allowance(),
        "candidateTokens": capacity - 10,
    }
    assert fit["capacity"] == capacity and fit["fixedTokens"] == FIXED and fit["tokensPerByte"] == RATE
    assert attempt["alignment"] == "user" and data["state"]["plan"] == attempt


def test_a_later_cut_that_still_keeps_keep_recent_is_not_a_reduction(dirs: dict[str, str]) -> None:
    history = small_history()
    # The user-aligned cut 4 is too big; the assistant boundary 5 keeps 5 >= 4 messages and fits.
    capacity = FIXED + model_allowance() + suffix_of(history, 5)
    data = plan(dirs, history, budget_result(history, capacity))
    assert data["cut"] == 5
    assert data["state"]["lastAttempt"]["reason"] == "recommended"
    assert data["state"]["lastAttempt"]["alignment"] == "assistant"


def test_suffix_over_budget_declines_with_a_detail(dirs: dict[str, str]) -> None:
    # The newest real user message is history[4]; a huge message after it leaves no cut that fits.
    history = [
        system(),
        user("Port the lexer."),
        assistant("a1"),
        assistant("a2"),
        user("Summarise the log."),
        assistant("a3"),
        assistant("y" * 40000),
        assistant("a5"),
    ]
    capacity = 5000
    data = plan(dirs, history, budget_result(history, capacity))
    assert data["cut"] is None and data["reason"] == "suffix_over_budget"
    suffix = suffix_of(history, 4)
    total = FIXED + model_allowance() + suffix
    detail = data["detail"]
    assert "history[4]" in detail and f"{suffix} tokens" in detail and f"{FIXED} fixed tokens" in detail
    assert f"capacity of {capacity} tokens" in detail and f"{total} tokens" in detail
    attempt = data["state"]["lastAttempt"]
    assert attempt["status"] == "skipped" and attempt["reason"] == "suffix_over_budget"
    assert attempt["detail"] == detail and attempt["fit"]["newestUser"] == 4


def test_a_history_without_any_keep_recent_cut_that_does_not_fit_says_why(dirs: dict[str, str]) -> None:
    history = [system(), user("z" * 40000), assistant("ok"), user("next"), assistant("done")]
    # keep_recent 4 leaves nothing before the suffix (history_too_short), but the history is over
    # capacity: a later cut that fits is taken (here: the newest user message).
    capacity = FIXED + model_allowance() + suffix_of(history, 3) + 1
    data = plan(dirs, history, budget_result(history, capacity))
    assert data["cut"] == 3 and data["state"]["lastAttempt"]["reason"] == "keep_recent_reduced"
    # Without the pressure it is declined as before.
    calm = plan(dirs, history, {**budget_result(history, capacity), "fits": True})
    assert calm["cut"] is None and calm["reason"] == "history_too_short"


def test_previous_attempt_moves_the_cut_later_or_declines(dirs: dict[str, str]) -> None:
    history = small_history()
    result = budget_result(history, 100000)
    first = plan(dirs, history, result)
    assert first["cut"] == 4
    second = plan(dirs, history, result, previous_attempt={"cut": 4, "reason": "candidate_over_budget"})
    assert second["cut"] == 5  # the earliest later cut that fits by estimate; still keeps 5 messages
    assert second["state"]["previous_attempt"] == {"cut": 4, "reason": "candidate_over_budget"}
    assert second["state"]["lastAttempt"]["previousAttempt"] == {"cut": 4, "reason": "candidate_over_budget"}
    assert second["state"]["lastAttempt"]["reason"] == "recommended"
    third = plan(dirs, history, result, previous_attempt={"cut": 6, "reason": "candidate_over_budget"})
    assert third["cut"] == 7 and third["state"]["lastAttempt"]["reason"] == "keep_recent_reduced"
    # Nothing later than the newest real user message (7): decline, saying what is too big.
    last = plan(dirs, history, result, previous_attempt={"cut": 7, "reason": "candidate_over_budget"})
    assert last["cut"] is None and last["reason"] == "suffix_over_budget"
    assert "No cut later than history[7]" in last["detail"] and "history[7]" in last["detail"]


def test_previous_attempt_falls_back_to_the_newest_user_message(dirs: dict[str, str]) -> None:
    history = small_history()
    # Nothing fits by estimate (capacity below the fixed cost): the newest real user message is
    # the last resort, because the first candidate already showed the estimates to be off.
    tight = plan(dirs, history, budget_result(history, 50), previous_attempt={"cut": 4, "reason": "x"})
    assert tight["cut"] == 7 and tight["state"]["lastAttempt"]["fit"]["fitsByEstimate"] is False
    # Without cut_estimates (an old budget worker) likewise.
    old = {**budget_result(history, 100000), "cut_estimates": None}
    assert plan(dirs, history, old, previous_attempt={"cut": 4, "reason": "candidate_over_budget"})["cut"] == 7
    declined = plan(dirs, history, old, previous_attempt={"cut": 7, "reason": "candidate_over_budget"})
    assert declined["reason"] == "suffix_over_budget" and "no cut_estimates" in declined["detail"]


def test_invalid_previous_attempt_or_estimates(dirs: dict[str, str]) -> None:
    history = small_history()
    result = budget_result(history, 100000)
    response = call(
        "compact_plan",
        {"history": history, "cut": None, "budget_result": result, "previous_attempt": {"cut": "4"}},
        dirs,
    )
    assert "previous_attempt must be" in response["error"]
    broken = plan(dirs, history, {**result, "cut_estimates": {"fixed_tokens": -1}})
    assert broken["cut"] == 4  # as without estimates
    assert broken["state"]["lastAttempt"]["cutEstimates"].startswith("invalid: ")
    no_reserve = {k: v for k, v in result.items() if k != "output_reserve"}
    unusable = plan(dirs, history, no_reserve)
    assert unusable["cut"] == 4 and unusable["state"]["lastAttempt"]["cutEstimates"].startswith("unusable")
    assert "request" not in unusable["state"]


def test_local_mode_allows_for_the_local_summary_bound(dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text('{"mode": "local"}')
    history = small_history()
    data = plan(dirs, history, budget_result(history, 100000))
    prefix = data["state"]["sizes"]["prefix"]
    _, critical = bounds_for_prefix(prefix, 8000)
    cut = data["cut"]
    # The task statement rides on top of the bound (issue 30), as far as the summary stays under
    # 60% of the prefix: the plan allows for it.
    _, statement = statement_size(history[1:])
    on_top = statement_room(prefix, critical, statement)
    assert 0 <= on_top <= statement
    allowance = data["state"]["lastAttempt"]["fit"]["keepRecentCandidate"]["summaryAllowance"]
    assert allowance == math.ceil((critical + on_top + CANONICAL_BYTES) * RATE)
    # What the local route then returns stays within that many bytes.
    prepared = call("before_compact", {"messages": history[1:cut], "cut": cut, "state": data["state"]}, dirs)["data"]
    assert len(prepared["summary"].encode()) <= critical + on_top + CANONICAL_BYTES


def test_a_small_window_gives_the_local_summary_the_room_left_beside_the_suffix(dirs: dict[str, str]) -> None:
    # A 4k-class window (measured against a real llama-server: the 12th turn failed before this):
    # the usual local bound does not fit beside the keep_recent suffix, a smaller one does. The cut
    # holds, and the local summary is written within the room the plan left.
    Path(dirs["config_dir"], "compact.json").write_text('{"mode": "local", "keep_recent": 4}')
    history = [system(), user("Port the lexer. Never push to main. " + "The build log says ok. " * 400)]
    history += [assistant("a1"), assistant("a2"), *small_history()[4:]]
    base = choose_cut(history, 4, None).cut
    assert base is not None
    _, critical = bounds_for_prefix(sum(approx_size(m) for m in history[1:base]), 8000)
    room = 150  # tokens: less than the usual bound (critical + tags) at RATE
    assert room < math.ceil((critical + CANONICAL_BYTES) * RATE)
    capacity = FIXED + room + suffix_of(history, base)
    data = plan(dirs, history, budget_result(history, capacity))
    assert data["cut"] == base, data
    cap = data["state"]["local_max_bytes"]
    assert cap == int(int(room * SQUEEZE_SHARE) / RATE) - CANONICAL_BYTES
    prepared = call("before_compact", {"messages": history[1:base], "cut": base, "state": data["state"]}, dirs)["data"]
    summary = prepared["summary"]
    assert len(summary.encode()) <= cap + CANONICAL_BYTES
    assert "Never push to main." in summary  # the ledger comes first, within the bound


def test_local_summary_bytes_are_bounded_for_wide_characters(dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text('{"mode": "local", "keep_recent": 2}')
    messages = [system(), user("移植词法分析器。不要修改持续集成配置。" * 200)]
    for i in range(60):
        messages += [
            assistant("决定使用新的方案。" * 30, [(f"c{i}", "shell", '{"cmd":"测试"}')]),
            tool(f"c{i}", f"job_{i:05d} 运行中 error: 失败 " + "日志" * 400),
        ]
    messages += [user("继续。"), assistant("好的")]
    data = plan(dirs, messages, budget_result(messages, 10**7))
    cut = data["cut"]
    prepared = call("before_compact", {"messages": messages[1:cut], "cut": cut, "state": data["state"]}, dirs)["data"]
    _, critical = bounds_for_prefix(data["state"]["sizes"]["prefix"], 8000)
    _, statement = statement_size(messages[1:])  # on top of the bound (issue 30)
    on_top = statement_room(data["state"]["sizes"]["prefix"], critical, statement)
    summary = prepared["summary"]
    assert len(summary.encode()) <= critical + on_top + CANONICAL_BYTES
    assert summary.startswith("<continuation_summary>\n") and summary.endswith("\n</continuation_summary>")


# -- property test ---------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(
    histories(),
    st.integers(1, 8),
    st.integers(0, 400),
    st.one_of(st.none(), st.integers(0, 60)),
    st.booleans(),
)
def test_a_fitted_cut_is_valid_fits_and_never_passes_the_newest_user(
    history: list[dict[str, Any]], keep: int, capacity: int, previous: int | None, over: bool
) -> None:
    table = {cut: tokens for cut, tokens in estimates(history, rate=1.0, fixed=5)["suffix"]}
    budget = FitBudget(capacity, CutEstimates(5, 1.0, table), lambda cut: 10)
    ok = boundaries(history)
    base = choose_cut(history, keep, None, ok)
    choice = fit_cut(history, ok, base, keep, budget, previous_cut=previous, over_capacity=over)
    if choice.cut is None:
        assert choice.reason
        if choice.reason == "suffix_over_budget":
            assert choice.detail and f"capacity of {capacity} tokens" in choice.detail
        return
    cut = choice.cut
    assert is_valid_cut(history, cut)
    assert any("<continuation_summary>" not in str(m.get("content")) for m in history[1:cut])
    if previous is not None:
        assert cut > previous
    if len(history) - cut < keep:
        assert choice.reason == "keep_recent_reduced"
        newest = newest_real_user(history)
        assert newest is not None and cut <= newest
    if cut != base.cut and choice.info.get("fitsByEstimate") is not False:
        assert budget.candidate(cut) is not None and budget.candidate(cut) <= capacity


def test_a_small_window_plans_a_shorter_summary_before_giving_up_keep_recent(dirs: dict[str, str]) -> None:
    # A 4k-class window: the full reply reserve (1024) does not fit beside the keep_recent suffix,
    # but 600 tokens do. keep_recent holds; the summary reply is capped and the prompt says so.
    history = small_history()
    base = choose_cut(history, 4, None).cut
    assert base is not None
    tags = math.ceil(CANONICAL_BYTES * RATE)
    capacity = FIXED + tags + 600 + suffix_of(history, base)
    result = budget_result(history, capacity, output_reserve=1024)
    data = plan(dirs, history, result)
    assert data["cut"] == base
    assert data["state"]["summary_max_tokens"] == 600
    assert data["state"]["lastAttempt"]["reason"] == "recommended"
    prepared = call(
        "before_compact",
        {"messages": history[1:base], "cut": base, "state": data["state"], "model": "m", "budget": {}},
        dirs,
    )["data"]
    assert prepared["max_tokens"] == 600
    assert "under 400 words" in prepared["prompt"]


def test_the_summary_is_never_planned_below_its_floor(dirs: dict[str, str]) -> None:
    # Room for only 100 summary tokens at the keep_recent cut: below the floor (256), so the cut
    # moves later instead of planning a uselessly short summary.
    history = small_history()
    base = choose_cut(history, 4, None).cut
    assert base is not None
    tags = math.ceil(CANONICAL_BYTES * RATE)
    capacity = FIXED + tags + 100 + suffix_of(history, base)
    data = plan(dirs, history, budget_result(history, capacity, output_reserve=1024))
    assert data["cut"] is None or data["cut"] > base
    if data["cut"] is not None:
        assert data["state"]["lastAttempt"]["reason"] == "keep_recent_reduced"
        assert data["state"].get("summary_max_tokens", 1024) >= 256


def test_a_window_with_room_keeps_the_full_reserve_and_no_cap(dirs: dict[str, str]) -> None:
    history = small_history()
    data = plan(dirs, history, budget_result(history, 100_000, output_reserve=1024))
    assert data["cut"] is not None
    assert "summary_max_tokens" not in data["state"]
    prepared = call(
        "before_compact",
        {"messages": history[1 : data["cut"]], "cut": data["cut"], "state": data["state"], "model": "m", "budget": {}},
        dirs,
    )["data"]
    assert "max_tokens" not in prepared and "words (it is cut off" not in prepared["prompt"]


def test_model_mode_plans_the_coding_sections_on_top_of_the_reply(dirs: dict[str, str]) -> None:
    history = [system(), user("Port the lexer to Rust; run `cargo test` when done.")]
    for n in range(12):
        history += [assistant(f"Reading part {n}.", [(f"c{n}", "read", f'{{"path": "src/lexer_{n}.rs"}}')])]
        history += [tool(f"c{n}", f"fn token_{n}() {{}}\n" * 40)]
    history += [user("Also the parser."), assistant("a1"), assistant("a2"), assistant("a3"), assistant("a4")]
    data = plan(dirs, history, budget_result(history, 100000))
    cut = data["cut"]
    candidate = data["state"]["lastAttempt"]["fit"]["keepRecentCandidate"]
    prefix = data["state"]["sizes"]["prefix"]
    _, critical = bounds_for_prefix(prefix, 8000)
    _, statement = statement_size(history[1:])
    sections = critical + statement_room(prefix, critical, statement)
    assert candidate["summaryAllowance"] == model_allowance() + math.ceil(sections * RATE)
    assert data["state"]["sections_max_bytes"] == pytest.approx(sections * SECTIONS_DENSITY, abs=4)
    prepared = call("before_compact", {"messages": history[1:cut], "cut": cut, "state": data["state"]}, dirs)["data"]
    assert "## Action log" in prepared["state"]["sections"] and "src/lexer_0.rs" in prepared["state"]["sections"]
    assert len(prepared["state"]["sections"].encode()) <= sections
