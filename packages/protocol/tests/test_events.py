"""The event list and the typed data of each event (``i_protocol.events``), and ``Worker.hook``'s
refusal of names outside it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from i_protocol import Worker, events
from i_protocol.budget import BudgetVerdict
from i_protocol.events import EventError, parse_answer, parse_request, to_json
from i_protocol.handshake import EXTENSIONS


def test_every_event_has_a_request_type_an_answer_type_and_a_parser():
    assert set(events.REQUESTS) == set(events.EVENTS)
    assert set(events.ANSWERS) == set(events.EVENTS)
    assert set(events.PARSERS) == set(events.EVENTS)
    assert len(set(events.EVENTS)) == len(events.EVENTS)


def test_every_extension_event_of_the_registry_is_an_event():
    for name in ("after_compact_commit", "tools_list", "provider_request"):
        assert name in EXTENSIONS and name in events.EVENTS


def test_a_misspelled_hook_name_is_refused_at_registration():
    worker = Worker("demo", "1.0")
    with pytest.raises(ValueError, match=r"unknown event 'before_turns'.*extension=True"):
        worker.hook("before_turns")
    with pytest.raises(ValueError, match="unknown event 'compactplan'"):
        worker.hook("before_turn", "compactplan")
    assert worker.events == []  # nothing of a refused registration stays


def test_an_extension_event_and_star_are_accepted():
    worker = Worker("demo", "1.0")
    worker.hook("after_everything", extension=True)(lambda data, request: {**data, "seen": True})
    worker.hook("*")(lambda data, request: data)
    worker.hook("before_turn", "provider_request", "hello")(lambda data, request: data)
    assert worker.events == ["*", "after_everything", "before_turn", "hello", "provider_request"]
    response = worker.handle({"id": 1, "event": "after_everything", "data": {"a": 1}})
    assert response == {"id": 1, "data": {"a": 1, "seen": True}}


def test_a_worker_program_with_a_misspelled_hook_fails_to_start_with_one_line(tmp_path):
    program = tmp_path / "typo_worker.py"
    program.write_text(
        textwrap.dedent(
            """
            from i_protocol import Worker
            worker = Worker("typo", "0.1")
            @worker.hook("before_compact_comit")
            def handle(data, request):
                return data
            """
        )
    )
    result = subprocess.run([sys.executable, str(program)], capture_output=True, text=True)
    assert result.returncode != 0
    assert "unknown event 'before_compact_comit'" in result.stderr


def test_answer_errors_name_the_event_and_the_field():
    with pytest.raises(EventError) as caught:
        parse_answer("tool_approval", {"decision": "maybe"})
    assert caught.value.event == "tool_approval" and caught.value.field == "decision"
    assert str(caught.value).startswith("tool_approval answer, field decision: answered decision 'maybe'")
    with pytest.raises(EventError) as caught:
        parse_answer("before_compact", {"chunks": [{"prompt": "p", "messages": []}, {"prompt": ""}]})
    assert caught.value.field == "chunks[1]" and caught.value.check == "summary_reply_invalid"


def test_answers_parse_into_typed_results():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    plan = parse_answer("compact_plan", {"cut": 2, "state": {"k": 1}}, {"history": history})
    assert plan == events.CompactPlan(2, {"k": 1}, "")
    with pytest.raises(EventError, match="need 2 <= cut < 3") as caught:
        parse_answer("compact_plan", {"cut": 3}, {"history": history})
    assert caught.value.check == "invalid_cut"
    verdict = parse_answer("context_budget", {"budget_result": {"fits": True, "estimate": 10}})
    assert isinstance(verdict, BudgetVerdict) and verdict.fits and verdict.estimate == 10
    prepared = parse_answer("before_compact", {"chunks": [{"prompt": "p", "messages": []}], "max_tokens": 5})
    assert prepared.requests == (events.SummaryRequest("p", []),) and prepared.max_tokens == 5
    assert parse_answer("tool", {"output": "x", "is_error": True}) == events.ToolResult("x", [], True)
    assert parse_answer("finish", {"anything": 1}) is None


def test_an_unchanged_answer_keeps_what_was_sent():
    sent = {"name": "read", "arguments": '{"path": "a"}', "id": "c1"}
    assert parse_answer("before_tool", dict(sent), sent) == ("read", '{"path": "a"}')
    assert parse_answer("user_input", {}, {"content": "hi"}) == "hi"


def test_to_json_checks_a_producer_answer_with_the_hosts_parser():
    assert to_json("system_prompt", {"prompt": "Be brief."}) == {"prompt": "Be brief."}
    with pytest.raises(EventError, match="system_prompt answer, field prompt"):
        to_json("system_prompt", {"prompt": "  "})
    assert events.ToolResult("out", is_error=True).to_json() == {"output": "out", "is_error": True}
    assert events.SummaryRequest("p", []).to_json() == {"prompt": "p", "messages": []}


def test_requests_are_checked_against_their_types_and_optional_fields_may_be_absent():
    data = {"request_meta": {}, "attempt": 2, "reason": "overloaded", "protocol": "openai"}
    assert parse_request("request_retry", data) is data
    with pytest.raises(EventError, match="request_retry request, field attempt: is str, not an integer"):
        parse_request("request_retry", {**data, "attempt": "2"})
    with pytest.raises(EventError, match="field reason: missing"):
        parse_request("request_retry", {"request_meta": {}, "attempt": 2, "protocol": "openai"})
    after_commit = {
        "committed": False,
        "reason": "declined",
        "cut": None,
        "comparable_before": 9,
        "comparable_after": None,
    }
    assert parse_request("after_compact_commit", after_commit) is after_commit  # check and state are optional
    with pytest.raises(EventError, match=r"field rejection\.limit"):
        parse_request(
            "context_budget",
            {
                "model": "m",
                "protocol": "openai",
                "budget": {},
                "max_tokens": None,
                "history": [],
                "tools": [],
                "cut": None,
                "rejection": {"limit": "many"},
            },
        )


def test_an_unknown_event_is_a_protocol_error():
    with pytest.raises(Exception, match="unknown event 'nope'"):
        parse_answer("nope", {})


def test_the_budget_verdict_is_the_one_reader_of_a_budget_answer():
    result = {"fits": False, "estimate": 900, "capacity": 800, "output_reserve": 100, "trigger": 600.5}
    verdict = BudgetVerdict.find({"budget_result": {**result, "recommend_compact": True, "cut_estimates": [1]}})
    assert verdict is not None and verdict.output_reserve == 100 and verdict.cut_estimates == [1]
    assert verdict.trigger is None  # not a token count: unknown, never guessed
    assert verdict.figures() == {
        "fits": False,
        "estimate": 900,
        "comparable_estimate": None,
        "trigger": None,
        "capacity": 800,
        "output_reserve": 100,
        "recommend_compact": True,
    }
    assert BudgetVerdict.find({"budget_result": {"estimate": 1}}) is None
    assert BudgetVerdict.find({"history": []}) is None


def test_before_compact_says_whether_the_focus_was_used():
    sent = {"messages": [], "cut": 2, "state": {}, "model": "m", "budget": {}, "focus": "the parser"}
    assert parse_request("before_compact", sent)["focus"] == "the parser"
    assert parse_answer("before_compact", {"summary": "s", "focus_used": True}, sent).focus_used is True
    assert parse_answer("before_compact", {**sent, "summary": "s"}, sent).focus_used is False  # returned unchanged
    with pytest.raises(EventError, match="before_compact answer, field focus_used: returned focus_used 'yes'"):
        parse_answer("before_compact", {"summary": "s", "focus_used": "yes"}, sent)
