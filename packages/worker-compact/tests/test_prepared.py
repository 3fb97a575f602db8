"""A summary the core prepared ahead of the trigger (extension ``prepared``): the plan takes its cut
when it is usable, and ``before_compact`` hands it back only for the same cut and the same request key."""

from __future__ import annotations

from typing import Any

from builders import assistant, system, user
from test_worker import BUDGET, call, configure

from i_compact.worker import worker


def conversation(turns: int) -> list[dict[str, Any]]:
    messages = [system()]
    for n in range(turns):
        messages += [user(f"request {n}: keep going with part {n}"), assistant(f"done with part {n}")]
    return messages


def plan(dirs: dict[str, str], messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    data = {"model": "m", "budget": {}, "history": messages, "tools": [], "cut": None, "budget_result": BUDGET}
    return call("compact_plan", {**data, **extra}, dirs)["data"]


def prepare(dirs: dict[str, str], messages: list[dict[str, Any]], cut: int) -> dict[str, Any]:
    """Plan-free preparation of ``history[1:cut]`` as the core would run it: before_compact, then
    after_compact with the model's reply; the final summary and the worker's state."""
    planned = plan(dirs, messages, force=True)
    data = {"messages": messages[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}}
    before = call("before_compact", data, dirs)["data"]
    assert "prompt" in before
    reply = "<continuation_summary>\nrequest 0 to 2 done\n</continuation_summary>"
    after = call("after_compact", {"summary": reply, "state": before["state"], "round": 2}, dirs)["data"]
    return after


def test_the_compactor_declares_prepared() -> None:
    assert "prepared" in worker.extensions


def test_the_plan_takes_the_prepared_cut_when_it_is_a_valid_earlier_cut(dirs) -> None:
    configure(dirs, keep_recent=2)
    messages = conversation(5)
    now = plan(dirs, messages)["cut"]
    assert now > 5
    chosen = plan(dirs, messages, prepared={"cut": 5, "summary_ref": "r1"})
    assert chosen["cut"] == 5


def test_the_plan_ignores_a_prepared_cut_it_cannot_use(dirs) -> None:
    configure(dirs, keep_recent=2)
    messages = conversation(5)
    now = plan(dirs, messages)["cut"]
    assert plan(dirs, messages, prepared={"cut": 1, "summary_ref": "r1"})["cut"] == now  # not a valid cut
    assert plan(dirs, messages, prepared={"cut": now + 1, "summary_ref": "r1"})["cut"] == now  # later than the plan's
    assert plan(dirs, messages, prepared={"cut": 5})["cut"] == now  # not the documented shape
    retry = {"cut": 5, "reason": "candidate_over_budget"}
    second = plan(dirs, messages, prepared={"cut": 5, "summary_ref": "r1"}, previous_attempt=retry)
    assert second["cut"] > 5  # a second plan: the candidate at the prepared cut did not fit


def test_the_plan_does_not_take_a_prepared_cut_whose_candidate_does_not_fit(dirs) -> None:
    configure(dirs, keep_recent=2)
    messages = conversation(5)
    suffix = [[cut, 1000 * (11 - cut)] for cut in range(2, 11)]
    estimates = {"fixed_tokens": 100, "tokens_per_byte": 0.25, "suffix": suffix}
    budget = {**BUDGET, "output_reserve": 500, "cut_estimates": estimates, "capacity": 5000}
    data = {"model": "m", "budget": {}, "history": messages, "tools": [], "cut": None, "budget_result": budget}
    fits = call("compact_plan", {**data, "prepared": {"cut": 7, "summary_ref": "r"}}, dirs)["data"]
    assert fits["cut"] == 7
    too_big = call("compact_plan", {**data, "prepared": {"cut": 5, "summary_ref": "r"}}, dirs)["data"]
    assert too_big["cut"] > 5
    assert too_big["state"]["plan"]["fit"]["preparedFits"] is False


def test_before_compact_hands_back_the_prepared_summary_for_the_same_cut_and_key(dirs) -> None:
    configure(dirs, keep_recent=2, cache=False)
    messages = conversation(4)
    made = prepare(dirs, messages, 5)
    assert made["state"]["prepared_key"]
    later = [*messages, user("request 4: more"), assistant("ok")]
    planned = plan(dirs, later, prepared={"cut": 5, "summary_ref": "ref"})
    assert planned["cut"] == 5
    given = {"cut": 5, "summary_ref": "ref", "summary": made["summary"], "state": made["state"]}
    data = {"messages": later[1:5], "cut": 5, "state": planned["state"], "model": "m", "budget": {}, "prepared": given}
    before = call("before_compact", data, dirs)["data"]
    assert before["summary"] == made["summary"] and "prompt" not in before and "prepared" not in before
    assert before["state"]["lastAttempt"]["reason"] == "prepared_summary_used"
    after = call("after_compact", {"summary": before["summary"], "state": before["state"], "round": 1}, dirs)["data"]
    assert "request" not in after  # the same ledger check, and nothing is missing
    assert after["summary"].count("<state_record") == made["summary"].count("<state_record") == 1
    assert after["summary"].count("request 0") == made["summary"].count("request 0")


def test_before_compact_makes_a_new_request_when_the_key_or_the_cut_differs(dirs) -> None:
    configure(dirs, keep_recent=2, cache=False)
    messages = conversation(4)
    made = prepare(dirs, messages, 5)
    given = {"cut": 5, "summary_ref": "ref", "summary": made["summary"], "state": made["state"]}
    planned = plan(dirs, messages, force=True)
    changed = [messages[0], user("request 0: something else entirely"), *messages[2:]]
    for msgs, cut in ((changed, 5), (messages, 3)):
        data = {
            "messages": msgs[1:cut],
            "cut": cut,
            "state": planned["state"],
            "model": "m",
            "budget": {},
            "prepared": given,
        }
        before = call("before_compact", data, dirs)["data"]
        assert "summary" not in before and "prompt" in before and "prepared" not in before
    other_model = {
        "messages": messages[1:5],
        "cut": 5,
        "state": planned["state"],
        "model": "m2",
        "budget": {},
        "prepared": given,
    }
    assert "summary" not in call("before_compact", other_model, dirs)["data"]
