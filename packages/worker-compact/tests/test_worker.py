"""The three hooks in process (worker.handle): config validation, routes, diagnostics, cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from builders import assistant, summary, system, tool, user

from i_compact.worker import worker


def call(event: str, data: dict[str, Any], dirs: dict[str, str], workspace: str | None = None) -> dict[str, Any]:
    frame = {"id": 7, "event": event, "data": data, "paths": dirs}
    if workspace:
        frame["workspace"] = workspace
    response = worker.handle(frame)
    assert response["id"] == 7
    return response


def configure(dirs: dict[str, str], **fields: Any) -> Path:
    path = Path(dirs["config_dir"]) / "compact.json"
    path.write_text(json.dumps(fields))
    return path


def history(rounds: int = 6) -> list[dict[str, Any]]:
    messages = [system(), user("Fix the failing test. Never force-push.")]
    for i in range(rounds):
        messages += [
            assistant(f"step {i}", [(f"c{i}", "shell", '{"cmd":"pytest"}')]),
            tool(f"c{i}", f"run_{i:04d}x ok"),
        ]
    messages += [user("now the docs"), assistant("done")]
    return messages


BUDGET = {
    "fits": False,
    "estimate": 5000,
    "comparable_estimate": 4800,
    "trigger": 4000,
    "capacity": 8000,
    "recommend_compact": True,
}


def plan(dirs: dict[str, str], messages: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    data = {
        "model": "m",
        "budget": {},
        "history": messages or history(),
        "tools": [],
        "cut": None,
        "budget_result": BUDGET,
        **extra,
    }
    return call("compact_plan", data, dirs)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"keep_recent": 0}, "keep_recent must be an integer from 1 to 10000, got 0"),
        ({"keep_recent": 10001}, "keep_recent must be an integer from 1 to 10000"),
        ({"keep_recent": True}, "keep_recent must be an integer"),
        ({"images": "blur"}, 'images must be one of keep, omit, describe, got "blur"'),
        ({"mode": "remote"}, "mode must be one of model, local"),
        ({"enabled": "yes"}, "enabled must be true or false"),
        ({"keep_recnet": 3}, "unknown field(s) keep_recnet"),
        ({"prompt": ""}, "prompt must be a non-empty string"),
        ({"prompt": "  "}, "prompt must be a non-empty file path"),
    ],
)
def test_invalid_config_is_a_clear_error(dirs: dict[str, str], fields: dict[str, Any], message: str) -> None:
    configure(dirs, **fields)
    response = plan(dirs)
    assert message in response["error"]
    assert "compact.json" in response["error"]


def test_prompt_file_errors(dirs: dict[str, str]) -> None:
    configure(dirs, prompt="prompts/compact.txt")
    missing = plan(dirs)  # the config check of the first request reads the prompt file too
    assert "prompt file" in missing["error"] and "does not exist" in missing["error"]
    assert missing["kind"] == "config"
    prompt = Path(dirs["config_dir"]) / "prompts" / "compact.txt"
    prompt.parent.mkdir()
    prompt.write_text("Summarise.")
    planned = plan(dirs)["data"]
    before = {"messages": history()[1:5], "cut": 5, "state": planned["state"], "model": "m", "budget": {}}
    prompt.unlink()
    assert "does not exist" in call("before_compact", before, dirs)["error"]
    prompt.write_text("   \n")
    assert "is empty" in call("before_compact", before, dirs)["error"]
    prompt.write_text("x" * 32001)
    assert "32001 characters; the limit is 32000" in call("before_compact", before, dirs)["error"]
    prompt.write_text("Summarise work in {{workspace}} please.")
    data = call("before_compact", before, dirs, workspace="/proj/a")["data"]
    assert data["prompt"] == "Summarise work in /proj/a please."
    assert data["state"]["prompt_source"].endswith("prompts/compact.txt")


def test_plan_follows_recommendation_and_declines_otherwise(dirs: dict[str, str]) -> None:
    planned = plan(dirs)["data"]
    assert planned["cut"] is not None and "reason" not in planned
    assert planned["state"]["lastAttempt"]["status"] == "planned"
    assert planned["state"]["lastAttempt"]["reason"] == "recommended"
    assert planned["budget_result"] == BUDGET and planned["tools"] == []  # fields it does not own survive
    declined = plan(dirs, budget_result={**BUDGET, "recommend_compact": False})["data"]
    assert declined["cut"] is None and declined["reason"] == "not_recommended"
    assert declined["state"]["lastAttempt"]["status"] == "skipped"
    missing = call("compact_plan", {"history": history(), "cut": None}, dirs)["data"]
    assert missing["cut"] is None and missing["reason"] == "missing_budget_result"
    # A budget answer is read one way (i_protocol's BudgetVerdict): without a verdict there is none.
    no_verdict = {key: value for key, value in BUDGET.items() if key != "fits"}
    unread = plan(dirs, budget_result=no_verdict)["data"]
    assert unread["cut"] is None and unread["reason"] == "missing_budget_result"


def test_force_compacts_without_a_recommendation(dirs: dict[str, str]) -> None:
    forced = plan(dirs, budget_result={**BUDGET, "recommend_compact": False}, force=True)["data"]
    assert forced["cut"] is not None and forced["state"]["lastAttempt"]["reason"] == "forced"


def test_disabled_policy_declines_even_when_forced(dirs: dict[str, str]) -> None:
    configure(dirs, enabled=False)
    data = plan(dirs, force=True)["data"]
    assert data["cut"] is None and data["reason"] == "disabled"


def test_keep_recent_from_config(dirs: dict[str, str]) -> None:
    configure(dirs, keep_recent=9)
    messages = history()
    data = plan(dirs, messages)["data"]
    assert len(messages) - data["cut"] >= 9


def test_plan_rejects_a_non_list_history(dirs: dict[str, str]) -> None:
    assert "history must be a list" in call("compact_plan", {"history": "x", "cut": None}, dirs)["error"]


def test_model_route_returns_prompt_and_prepared_messages(dirs: dict[str, str]) -> None:
    planned = plan(dirs)["data"]
    cut = planned["cut"]
    data = call(
        "before_compact",
        {"messages": history()[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
        dirs,
        workspace="/w",
    )["data"]
    assert "summary" not in data
    assert "/w" in data["prompt"] and "{{workspace}}" not in data["prompt"]
    for section in (
        "Latest user request",
        "Authorization boundaries",
        "Pending jobs",
        "Next step",
        "Blockers",
        "Checks not run",
        "Modified artifacts",
        "<continuation_summary>",
        "UNTRUSTED",
    ):
        assert section in data["prompt"]
    assert data["messages"][0] == {"role": "user", "content": "Fix the failing test. Never force-push."}
    assert data["summary_images"] == [] and data["retained_images"] == []
    assert data["state"]["lastAttempt"]["reason"] == "model_prompt_prepared"


def test_earlier_hook_prompt_is_used_when_no_file_is_configured(dirs: dict[str, str]) -> None:
    data = call(
        "before_compact",
        {"messages": history()[1:4], "cut": 4, "state": {}, "prompt": "Custom {{workspace}}"},
        dirs,
        workspace="/w",
    )["data"]
    assert data["prompt"] == "Custom /w"


def test_local_mode_returns_a_summary_without_prompt(dirs: dict[str, str]) -> None:
    configure(dirs, mode="local")
    planned = plan(dirs, history(30))["data"]
    cut = planned["cut"]
    data = call("before_compact", {"messages": history(30)[1:cut], "cut": cut, "state": planned["state"]}, dirs)["data"]
    assert data["summary"].startswith("<continuation_summary>\n") and "run_0000x" in data["summary"]
    assert "prompt" not in data
    assert data["state"]["lastAttempt"]["reason"] == "local_summary"


def test_local_mode_keeps_resume_calls_beyond_local_max_chars(dirs: dict[str, str]) -> None:
    configure(dirs, mode="local", local_max_chars=1000, keep_recent=2)
    messages = [system(), user("Stage the release.")]
    resumes = []
    for i in range(4):
        resume = json.dumps({"tool": "workspace_command", "arguments": {"action": "run", "stdin": "x" * 1500, "i": i}})
        resumes.append(resume)
        result = (
            f'{{"data":{{"status":"pending_approval","approval":{{"id":"approval_{i:05d}","resume":{resume}}},'
            f'"log":"{"y" * 20000}"}}}}'
        )
        messages += [assistant("", [(f"c{i}", "workspace_command", "{}")]), tool(f"c{i}", result)]
    messages += [user("now the docs"), assistant("done")]
    planned = plan(dirs, messages)["data"]
    cut = planned["cut"]
    prefix = messages[1:cut]
    data = call("before_compact", {"messages": prefix, "cut": cut, "state": planned["state"]}, dirs)["data"]
    summary = data["summary"]
    for resume in resumes:  # 6 KB of resume calls: over local_max_chars, far under a fifth of the prefix
        assert resume in summary
    assert len(summary) * 5 <= sum(len(m.get("content") or "") for m in prefix)


def test_after_compact_normalizes_and_records_estimates(dirs: dict[str, str]) -> None:
    planned = plan(dirs)["data"]
    data = call(
        "after_compact",
        {"summary": "Here:\n```\n<continuation_summary>state</continuation_summary>\n```", "state": planned["state"]},
        dirs,
    )["data"]
    assert data["summary"] == "<continuation_summary>\nstate\n</continuation_summary>"
    attempt = data["state"]["lastAttempt"]
    # Nothing is committed yet: the final record comes with after_compact_commit.
    assert attempt["status"] == "prepared" and attempt["reason"] == "summary_normalized"
    assert attempt["summaryNormalization"] == "extracted_block"
    assert attempt["comparableEstimateBefore"] == 4800
    assert 0 < attempt["estimatedInputTokensAfter"] < 4800
    assert attempt["estimatedSavedTokens"] == 4800 - attempt["estimatedInputTokensAfter"]


def test_empty_summary_fails_and_keeps_the_previous_one_in_the_session(dirs: dict[str, str]) -> None:
    old = "<continuation_summary>\nold facts tx_1a2b\n</continuation_summary>"
    messages = [system(), summary(old), *history()[1:]]
    planned = plan(dirs, messages)["data"]
    assert planned["state"]["previous_summary"] == old
    for empty in ("```\n<continuation_summary>\n</continuation_summary>\n```", "  ", None, 3, ["x"]):
        response = call("after_compact", {"summary": empty, "state": planned["state"]}, dirs)
        # Never a silent substitute: the attempt fails, nothing is committed, the old summary stays.
        assert "data" not in response
        assert "empty_summary_preserved_previous" in response["error"]
        assert "previous summary stays in the session" in response["error"]


def test_empty_summary_without_previous_fails_and_is_recorded(dirs: dict[str, str], tmp_path: Path) -> None:
    workspace = tmp_path / "proj"
    workspace.mkdir()
    planned = plan(dirs)["data"]
    response = call("after_compact", {"summary": "  ", "state": planned["state"]}, dirs, workspace=str(workspace))
    assert "invalid_summary_contract" in response["error"]
    response = call("after_compact", {"summary": 3, "state": planned["state"]}, dirs, workspace=str(workspace))
    assert "must be a non-empty string, got int" in response["error"]
    assert "invalid_summary_contract" in response["error"]
    assert "invalid_summary_contract" in call("after_compact", {"summary": 3, "state": {}}, dirs)["error"]
    # The failure waits for the core's verdict; only after_compact_commit writes last-attempt.json.
    folder = Path(dirs["data_dir"])
    assert not list(folder.glob("workspaces/*/compact/last-attempt.json"))
    commit = {
        "committed": False,
        "reason": "after_compact failed",
        "check": "worker_failed",
        "cut": planned["cut"],
        "comparable_before": 4800,
        "comparable_after": None,
        "state": planned["state"],
    }
    assert call("after_compact_commit", commit, dirs, workspace=str(workspace))["data"] == commit
    records = list(folder.glob("workspaces/*/compact/last-attempt.json"))
    assert len(records) == 1
    record = json.loads(records[0].read_text())
    assert record["status"] == "failed" and record["reason"] == "invalid_summary_contract"
    assert record["check"] == "worker_failed" and record["attempt"] == planned["state"]["attempt"]
    assert "invalid_summary_contract" in record["error"]


def test_after_compact_redacts_secret_values(dirs: dict[str, str]) -> None:
    data = call(
        "after_compact",
        {"summary": "key OPENAI_API_KEY=sk-proj-AbCdEfGhIjKlMnOpQrStUv123456 in .env", "state": {}},
        dirs,
    )["data"]
    assert "AbCdEfGhIjKlMnOp" not in data["summary"] and "OPENAI_API_KEY" in data["summary"]


def test_summary_cache_reuses_only_for_the_same_prompt(dirs: dict[str, str]) -> None:
    messages = history()[1:6]
    before = {"messages": messages, "cut": 6, "state": {}, "model": "m", "budget": {}}
    first = call("before_compact", before, dirs)["data"]
    assert "prompt" in first
    final = call("after_compact", {"summary": "cached facts", "state": first["state"]}, dirs)["data"]["summary"]
    assert final.startswith("<continuation_summary>\ncached facts\n") and "<state_record" in final
    again = call("before_compact", before, dirs)["data"]
    assert again["summary"] == final
    assert again["state"]["lastAttempt"]["reason"] == "summary_cache_hit" and "prompt" not in again
    # A different prompt must not reuse the old summary.
    prompt = Path(dirs["config_dir"]) / "p.txt"
    prompt.write_text("Another prompt")
    configure(dirs, prompt="p.txt")
    changed = call("before_compact", before, dirs)["data"]
    assert "summary" not in changed and changed["prompt"] == "Another prompt"
    configure(dirs, cache=False)
    assert "summary" not in call("before_compact", before, dirs)["data"]


def test_before_compact_rejects_bad_messages(dirs: dict[str, str]) -> None:
    assert "data.messages must be a non-empty list" in call("before_compact", {"messages": [], "cut": 2}, dirs)["error"]
    assert "data.messages" in call("before_compact", {"messages": "x", "cut": 2}, dirs)["error"]


def test_images_follow_budget_policy_when_config_is_silent(dirs: dict[str, str]) -> None:
    png = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "see"}, png]}, assistant("ok")]
    data = call(
        "before_compact",
        {"messages": messages, "cut": 3, "state": {}, "model": "m", "budget": {"images": "describe"}},
        dirs,
    )["data"]
    assert data["summary_images"] == [png] and data["retained_images"] == []
    assert "Describe in the summary what each shows" in data["prompt"]
    configure(dirs, images="omit")
    data = call(
        "before_compact",
        {"messages": messages, "cut": 3, "state": {}, "model": "m", "budget": {"images": "describe"}},
        dirs,
    )["data"]
    assert data["summary_images"] == [] and data["retained_images"] == []
