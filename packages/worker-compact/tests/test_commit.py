"""after_compact_commit: the one place the final record is written (last-attempt.json + history)."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, system, tool, user

from i_compact import diagnostics
from i_compact.worker import worker

BUDGET = {
    "fits": False,
    "estimate": 5000,
    "comparable_estimate": 4800,
    "trigger": 4000,
    "capacity": 8000,
    "recommend_compact": True,
}


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    folder = tmp_path / "proj"
    folder.mkdir()
    return str(folder)


def call(event: str, data: dict[str, Any], dirs: dict[str, str], workspace: str) -> dict[str, Any]:
    return worker.handle({"id": 3, "event": event, "data": data, "paths": dirs, "workspace": workspace})


def history() -> list[dict[str, Any]]:
    messages = [system(), user("Fix the failing test.")]
    for i in range(4):
        messages += [assistant(f"step {i}", [(f"c{i}", "shell", "{}")]), tool(f"c{i}", f"run_{i:04d}x ok")]
    return [*messages, user("now the docs"), assistant("done")]


def folder(dirs: dict[str, str]) -> Path:
    (found,) = Path(dirs["data_dir"]).glob("workspaces/*")
    return found / "compact"


def last_attempt(dirs: dict[str, str]) -> dict[str, Any]:
    return json.loads((folder(dirs) / "last-attempt.json").read_text())


def attempts(dirs: dict[str, str]) -> list[dict[str, Any]]:
    return json.loads((folder(dirs) / "attempts.json").read_text())["records"]


def flow(dirs: dict[str, str], workspace: str) -> tuple[dict[str, Any], dict[str, Any]]:
    messages = history()
    planned = call("compact_plan", {"history": messages, "cut": None, "budget_result": BUDGET}, dirs, workspace)["data"]
    cut = planned["cut"]
    prepared = call(
        "before_compact", {"messages": messages[1:cut], "cut": cut, "state": planned["state"]}, dirs, workspace
    )["data"]
    final = call(
        "after_compact",
        {"summary": "<continuation_summary>\nfacts\n</continuation_summary>", "state": prepared["state"], "round": 0},
        dirs,
        workspace,
    )["data"]
    return planned, final


def commit(**fields: Any) -> dict[str, Any]:
    return {
        "committed": False,
        "reason": "",
        "check": None,
        "cut": None,
        "comparable_before": 4800,
        "comparable_after": None,
        "state": {},
        **fields,
    }


def test_after_compact_alone_writes_no_compacted_record(dirs: dict[str, str], workspace: str) -> None:
    _, final = flow(dirs, workspace)
    assert final["round"] == 0  # a round field passes through
    assert final["state"]["lastAttempt"]["status"] == "prepared"
    assert final["state"]["lastAttempt"]["round"] == 0
    assert not list(Path(dirs["data_dir"]).glob("workspaces/*/compact/last-attempt.json"))
    assert not list(Path(dirs["data_dir"]).glob("workspaces/*/compact/attempts.json"))


def test_committed_writes_compacted(dirs: dict[str, str], workspace: str) -> None:
    planned, final = flow(dirs, workspace)
    data = commit(
        committed=True,
        reason="comparable estimate 4800 -> 900",
        check=None,
        cut=planned["cut"],
        comparable_before=4800,
        comparable_after=900,
        state=final["state"],
    )
    assert call("after_compact_commit", data, dirs, workspace)["data"] == data  # unchanged
    record = last_attempt(dirs)
    assert record["status"] == "compacted" and record["reason"] == "committed"
    assert record["comparableEstimateBefore"] == 4800 and record["comparableEstimateAfter"] == 900
    assert record["savedTokens"] == 3900 and record["cut"] == planned["cut"]
    assert record["summaryNormalization"] == "wrapped_block" and record["attempt"] == planned["state"]["attempt"]
    assert record["plan"]["reason"] == "recommended" and record["coreReason"] == "comparable estimate 4800 -> 900"
    assert attempts(dirs) == [record]


def test_declined_plan_writes_skipped_with_its_reason(dirs: dict[str, str], workspace: str) -> None:
    declined = call(
        "compact_plan",
        {"history": history(), "cut": None, "budget_result": {**BUDGET, "recommend_compact": False}},
        dirs,
        workspace,
    )["data"]
    assert declined["reason"] == "not_recommended"
    call(
        "after_compact_commit",
        commit(check="declined", reason="not_recommended", state=declined["state"]),
        dirs,
        workspace,
    )
    record = last_attempt(dirs)
    assert record["status"] == "skipped" and record["reason"] == "not_recommended" and record["check"] == "declined"


def test_suffix_over_budget_skip_keeps_the_detail(dirs: dict[str, str], workspace: str) -> None:
    messages = [system(), user("go"), assistant("a"), assistant("b"), user("last"), assistant("x" * 9000)]
    suffix = [[2, 9030], [3, 9020], [4, 9010], [5, 9000]]
    result = {
        **BUDGET,
        "output_reserve": 500,
        "cut_estimates": {"fixed_tokens": 50, "tokens_per_byte": 1.0, "suffix": suffix},
    }
    data = call("compact_plan", {"history": messages, "cut": None, "budget_result": result}, dirs, workspace)["data"]
    assert data["reason"] == "suffix_over_budget"
    call(
        "after_compact_commit",
        commit(check="declined", reason="suffix_over_budget", state=data["state"]),
        dirs,
        workspace,
    )
    record = last_attempt(dirs)
    assert record["status"] == "skipped" and record["reason"] == "suffix_over_budget"
    assert record["detail"] == data["detail"] and "history[4]" in record["detail"]


def test_refused_by_core_writes_failed_with_the_check(dirs: dict[str, str], workspace: str) -> None:
    planned, final = flow(dirs, workspace)
    data = commit(
        check="candidate_over_budget",
        reason="the compacted history does not fit the context budget",
        cut=planned["cut"],
        comparable_after=8100,
        state=final["state"],
    )
    call("after_compact_commit", data, dirs, workspace)
    record = last_attempt(dirs)
    assert record["status"] == "failed" and record["reason"] == "refused_by_core:candidate_over_budget"
    assert record["check"] == "candidate_over_budget" and record["comparableEstimateAfter"] == 8100
    call("after_compact_commit", commit(check="Not a code!", state=final["state"]), dirs, workspace)
    assert last_attempt(dirs)["reason"] == "refused_by_core:unknown"


def test_a_plan_failure_keeps_the_workers_reason(dirs: dict[str, str], workspace: str) -> None:
    response = call("compact_plan", {"history": "nope", "cut": None}, dirs, workspace)
    assert "history must be a list" in response["error"]
    call("after_compact_commit", commit(check="worker_failed", reason="compact_plan failed"), dirs, workspace)
    record = last_attempt(dirs)
    assert record["status"] == "failed" and record["reason"] == "invalid_request"
    assert record["event"] == "compact_plan"
    # The failure was consumed: a later refusal is the core's.
    call("after_compact_commit", commit(check="worker_failed"), dirs, workspace)
    assert last_attempt(dirs)["reason"] == "refused_by_core:worker_failed"


def test_failed_state_keeps_its_reason(dirs: dict[str, str], workspace: str) -> None:
    state = {"attempt": "a1", "lastAttempt": {"status": "failed", "reason": "invalid_config", "error": "bad"}}
    call("after_compact_commit", commit(check="worker_failed", state=state), dirs, workspace)
    record = last_attempt(dirs)
    assert record["reason"] == "invalid_config" and record["error"] == "bad"


def test_history_is_bounded_and_shared_safely(dirs: dict[str, str], workspace: str) -> None:
    def commit_many(start: int) -> None:
        for i in range(start, start + 15):
            state = {"attempt": f"a{i}", "lastAttempt": {"status": "planned", "reason": "recommended"}}
            call("after_compact_commit", commit(check="not_reducing", cut=i, state=state), dirs, workspace)

    call("after_compact_commit", commit(check="not_reducing", cut=0), dirs, workspace)  # registers the workspace
    threads = [threading.Thread(target=commit_many, args=(n * 100,)) for n in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    records = attempts(dirs)
    assert len(records) == diagnostics.HISTORY_MAX
    assert all(r["reason"] == "refused_by_core:not_reducing" for r in records)
    assert len({r["attempt"] for r in records}) == diagnostics.HISTORY_MAX
    assert not list(folder(dirs).glob(".*.tmp"))
