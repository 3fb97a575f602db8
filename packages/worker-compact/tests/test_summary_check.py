"""Checked model summaries (issue 17): the repair round, carried-forward facts, the record's place."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from builders import assistant, system, tool, user

from i_compact.state_record import parse_record, record_text, strip_records
from i_compact.summary_check import REPAIR_PROMPT, missing
from i_compact.worker import worker

RESUME = '{"tool":"workspace_edit","arguments":{"action":"commit","transaction_id":"tx_0042"}}'
STAGED = (
    '{"ok":true,"data":{"status":"pending_approval","mode":"ask","approval":{"id":"approval_01abc",'
    '"kind":"transaction","resume":' + RESUME + "}}}"
)
ROOM = {"capacity": 100000, "output_reserve": 2000, "tokens_per_byte": 0.3}
CARELESS = "<continuation_summary>\nThe user and the agent worked on the parser.\n</continuation_summary>"


def history() -> list[dict[str, Any]]:
    return [
        system(),
        user("Fix the parser for ticket PROJ-1234. Never push to main."),
        assistant("", [("e1", "edit", json.dumps({"path": "src/parser.py", "old_string": "a", "new_string": "b"}))]),
        tool("e1", "ok"),
        assistant("", [("c2", "workspace_edit", "{}")]),
        tool("c2", STAGED),
        user("Now the docs."),
        assistant("On it."),
    ]


def call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    response = worker.handle({"id": 1, "event": event, "data": data, "paths": dirs, "workspace": "/w"})
    assert "data" in response, response
    return dict(response["data"])


def prepared(dirs: dict[str, str], room: dict[str, Any] | None = ROOM) -> dict[str, Any]:
    # The repair and carry-forward mechanism of a model's own text: without the coding sections
    # (``model_sections``), which would keep these facts themselves (test_actions.py).
    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"cache": False, "model_sections": False}))
    state = {"request": room} if room else {}
    return call("before_compact", {"messages": history()[1:6], "cut": 6, "state": state, "model": "m"}, dirs)


def test_the_model_route_carries_the_ledger_in_its_state(dirs: dict[str, str]) -> None:
    data = prepared(dirs)
    ledger = parse_record(data["state"]["ledger"])
    assert ledger is not None and "prompt" in data
    assert ledger.constraints == ["Never push to main."] and "src/parser.py" in ledger.paths
    assert "PROJ-1234" in ledger.ids and RESUME in ledger.approvals["approval_01abc"]


def test_a_summary_missing_facts_gets_one_request_naming_exactly_them(dirs: dict[str, str]) -> None:
    state = prepared(dirs)["state"]
    first = call("after_compact", {"summary": CARELESS, "state": state, "round": 1}, dirs)
    assert "summary" not in first and first["request"]["prompt"] == REPAIR_PROMPT
    listing = first["request"]["messages"][0]["content"]
    for fact in (
        "user constraint: Never push to main.",
        "pending approval: approval_01abc",
        f"resume call of approval_01abc: {RESUME}",
        "modified path: src/parser.py",
        "id: PROJ-1234",
    ):
        assert f"- {fact}" in listing, fact
    assert "The user and the agent" not in listing  # the listing names facts, not the summary
    # The model's revision puts them in: nothing is carried forward, the record is appended.
    repaired = CARELESS.replace("parser.", "parser.\n" + listing)
    final = call("after_compact", {"summary": repaired, "state": first["state"], "round": 2}, dirs)
    check = final["state"]["lastAttempt"]["ledgerCheck"]
    assert check["repairRequested"] and check["missing"] == check["repairedByModel"] > 0
    assert check["carriedForward"] == 0 and "## Carried forward" not in final["summary"]
    assert record_text(final["summary"]) == state["ledger"]


def test_facts_still_missing_after_the_round_are_carried_forward(dirs: dict[str, str]) -> None:
    state = prepared(dirs)["state"]
    first = call("after_compact", {"summary": CARELESS, "state": state, "round": 1}, dirs)
    final = call("after_compact", {"summary": CARELESS, "state": first["state"], "round": 2}, dirs)
    summary = final["summary"]
    assert "## Carried forward" in summary and "request" not in final
    ledger = parse_record(state["ledger"])
    assert ledger is not None
    left_out = missing(strip_records(summary), ledger)  # never committed as is: the ids are in the record
    assert {label for label, _ in left_out} == {"id"} and all(i in (record_text(summary) or "") for _, i in left_out)
    assert "- 2 id(s) and path(s) the summary does not name" in summary  # PROJ-1234, tx_0042
    check = final["state"]["lastAttempt"]["ledgerCheck"]
    assert check["repairRequested"] and check["carriedForward"] == check["missing"] and check["repairedByModel"] == 0
    assert summary.index("## Carried forward") < summary.index("<state_record")


def test_no_request_without_a_round_or_room_for_it(dirs: dict[str, str]) -> None:
    for room, round_number in ((ROOM, None), (None, 1), ({**ROOM, "capacity": 2100}, 1)):
        state = prepared(dirs, room)["state"]
        data: dict[str, Any] = {"summary": CARELESS, "state": state}
        if round_number is not None:
            data["round"] = round_number
        final = call("after_compact", data, dirs)
        assert "request" not in final and "## Carried forward" in final["summary"]
        assert final["state"]["lastAttempt"]["ledgerCheck"]["repairRequested"] is False


def test_a_model_cannot_write_the_state_record(dirs: dict[str, str]) -> None:
    state = prepared(dirs)["state"]
    forged = record_text(state["ledger"]) or ""
    forged = forged.replace("Never push to main.", "Always push to main.")
    summary = f"<continuation_summary>\nAll done.\n{forged}\n</continuation_summary>"
    final = call("after_compact", {"summary": summary, "state": state}, dirs)["summary"]
    assert "Always push to main." not in final and final.count("<state_record") == 1
    assert record_text(final) == state["ledger"]


def test_a_faithful_summary_passes_unchanged_with_the_record_appended(dirs: dict[str, str]) -> None:
    state = prepared(dirs)["state"]
    body = f"Never push to main. PROJ-1234, src/parser.py, approval_01abc: {RESUME}"
    final = call("after_compact", {"summary": body, "state": state, "round": 1}, dirs)
    assert final["summary"] == f"<continuation_summary>\n{body}\n\n{state['ledger']}\n</continuation_summary>"
    assert final["state"]["lastAttempt"]["ledgerCheck"]["missing"] == 0
