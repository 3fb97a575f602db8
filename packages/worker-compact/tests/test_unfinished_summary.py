"""A model summary that did not finish normally (previous_attempt reason summary_not_finished):
compact.json's on_unfinished_summary says whether the plan answers with the local summary."""

from __future__ import annotations

from typing import Any

import pytest
from test_worker import call, configure, history, plan

UNFINISHED = {"cut": 14, "reason": "summary_not_finished"}


def prepare(dirs: dict[str, str], planned: dict[str, Any]) -> dict[str, Any]:
    messages = history()
    data = {"messages": messages[1 : planned["cut"]], "cut": planned["cut"], "state": planned["state"]}
    return call("before_compact", {**data, "model": "m", "budget": {}}, dirs)["data"]


def test_the_default_answers_with_the_local_summary(dirs: dict[str, str]) -> None:
    configure(dirs, mode="model", keep_recent=2)
    planned = plan(dirs, previous_attempt=UNFINISHED)["data"]
    assert planned["cut"] == 14  # the same cut may be planned again: it was not over budget
    state = planned["state"]
    assert state["fallback"] == "local" and state["policy"]["mode"] == "local"
    assert state["previous_attempt"] == UNFINISHED
    assert state["lastAttempt"]["previousAttempt"] == UNFINISHED
    assert state["lastAttempt"]["fallback"].startswith("local summary: the model summary did not finish")
    prepared = prepare(dirs, planned)
    assert "prompt" not in prepared and prepared["summary"].startswith("<continuation_summary>")
    assert prepared["state"]["lastAttempt"]["reason"] == "local_summary"


def test_fail_declines_with_the_reason(dirs: dict[str, str]) -> None:
    configure(dirs, mode="model", keep_recent=2, on_unfinished_summary="fail")
    planned = plan(dirs, previous_attempt=UNFINISHED)["data"]
    assert planned["cut"] is None and planned["reason"] == "summary_not_finished"
    assert planned["state"]["lastAttempt"]["status"] == "skipped"
    assert "fallback" not in planned["state"]


def test_without_the_reason_model_mode_stays(dirs: dict[str, str]) -> None:
    configure(dirs, mode="model", keep_recent=2)
    planned = plan(dirs)["data"]
    assert "fallback" not in planned["state"] and planned["state"]["policy"]["mode"] == "model"
    assert "prompt" in prepare(dirs, planned)


@pytest.mark.parametrize("value", ["model", "", 1])  # null means "not set" (i_protocol.settings)
def test_an_unknown_setting_is_a_clear_error(dirs: dict[str, str], value: Any) -> None:
    configure(dirs, on_unfinished_summary=value)
    response = plan(dirs)
    assert "on_unfinished_summary must be one of local, fail" in response["error"]
