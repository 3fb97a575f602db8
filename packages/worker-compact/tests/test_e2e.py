"""End to end through the real ``i-compact`` process: the whole compaction flow and its errors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from builders import assistant, system, tool, user
from builders import summary as summary_of

from i_protocol import ErrorFrame
from i_protocol.host import WorkerProcess

EXE = Path(sys.executable).parent / "i-compact"
RESUME = '{"tool":"workspace_edit","arguments":{"action":"commit","transaction_id":"tx_0042"}}'
BUDGET = {
    "fits": False,
    "estimate": 90000,
    "comparable_estimate": 88000,
    "trigger": 80000,
    "capacity": 100000,
    "recommend_compact": True,
}


@pytest.fixture
def spawn(dirs: dict[str, str], tmp_path: Path) -> Iterator[Any]:
    started: list[WorkerProcess] = []
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONUTF8": "1",
        "HOME": str(tmp_path),
        **{f"I_{k.split('_')[0].upper()}_DIR": v for k, v in dirs.items()},
    }

    def start() -> WorkerProcess:
        process = WorkerProcess.spawn([str(EXE)], env=env, cwd=str(tmp_path))
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


def long_history() -> list[dict[str, Any]]:
    staged = (
        '{"ok":true,"data":{"status":"pending_approval","mode":"ask","approval":{"id":"approval_01abc",'
        '"kind":"transaction","title":"commit edit","destructive":false,"resume":' + RESUME + "},"
        '"markdown":"' + "plan " * 4000 + '"},"retention":{"omit_when_summarizing":["data.markdown"]}}'
    )
    messages = [system(), user("Port the lexer to Rust. Do not touch CI config.")]
    messages += [assistant("", [("c1", "write", '{"path":"src/lexer.rs","content":"fn main(){}"}')]), tool("c1", "ok")]
    messages += [assistant("", [("c2", "workspace_edit", "{}")]), tool("c2", staged)]
    messages += [
        assistant("", [("c3", "shell", '{"cmd":"cargo test"}')]),
        tool(
            "c3",
            "job_900aa running\nerror[E0425]: cannot find value `tok`\nDB_PASSWORD=hunter2hunter2\n" + "log\n" * 3000,
        ),
    ]
    messages += [{"role": "assistant", "content": "Fixing E0425 next.", "_anthropic_content": [{"type": "thinking"}]}]
    messages += [user("Also keep the Python fallback."), assistant("ok"), assistant("working"), assistant("still")]
    return messages


def run_flow(
    worker: WorkerProcess, history: list[dict[str, Any]], summary: str | None = None, workspace: str = "/proj"
) -> dict[str, Any]:
    context = {"workspace": workspace}
    planned = worker.call(
        "compact_plan",
        {"model": "m", "budget": {}, "history": history, "tools": [], "cut": None, "budget_result": BUDGET},
        context=context,
    )
    cut = planned["cut"]
    assert 2 <= cut < len(history) and history[cut]["role"] in ("user", "assistant")
    prepared = worker.call(
        "before_compact",
        {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
        context=context,
    )
    produced = prepared.get("summary", summary)
    final = worker.call("after_compact", {"summary": produced, "state": prepared["state"]}, context=context)
    commit = {
        "committed": True,
        "reason": "comparable estimate 88000 -> 20000",
        "check": None,
        "cut": cut,
        "comparable_before": 88000,
        "comparable_after": 20000,
        "state": final["state"],
    }
    assert worker.call("after_compact_commit", commit, context=context) == commit
    return {"planned": planned, "prepared": prepared, "final": final, "cut": cut}


def test_version_and_help() -> None:
    out = subprocess.run([str(EXE), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("i-worker-compact ")
    out = subprocess.run([str(EXE), "--help"], capture_output=True, text=True, check=True).stdout
    assert "after_compact" in out and "before_compact" in out and "compact_plan" in out


def last_attempt(dirs: dict[str, str]) -> dict[str, Any]:
    (path,) = Path(dirs["data_dir"]).glob("workspaces/*/compact/last-attempt.json")
    return orjson.loads(path.read_bytes())


def test_model_mode_flow(spawn: Any, dirs: dict[str, str], tmp_path: Path) -> None:
    # The model's text, checked and carried forward, without the coding sections (test_actions.py).
    Path(dirs["config_dir"], "compact.json").write_text('{"model_sections": false}')
    worker = spawn()
    history = long_history()
    project = tmp_path / "proj"
    project.mkdir()
    result = run_flow(
        worker,
        history,
        summary="Sure:\n<continuation_summary>\nlexer port; approval_01abc\n</continuation_summary>",
        workspace=str(project),
    )
    assert history[result["cut"]]["content"] == "Also keep the Python fallback."  # user-aligned
    prepared = result["prepared"]
    dumped = orjson.dumps(prepared["messages"]).decode()
    assert any(RESUME in m["content"] for m in prepared["messages"] if m["role"] == "tool")
    assert "plan plan plan" not in dumped  # declared omission
    assert "hunter2hunter2" not in dumped and "_anthropic_content" not in dumped
    assert str(project) in prepared["prompt"]
    final = result["final"]["summary"]
    # Without a round (an old core), the check carries forward what the summary left out at once,
    # and the state record rides along verbatim.
    assert final.startswith("<continuation_summary>\nlexer port; approval_01abc\n\n## Carried forward")
    assert "- modified path: src/lexer.rs" in final and f"resume call of approval_01abc: {RESUME}" in final
    assert final.endswith("</state_record>\n</continuation_summary>")
    assert result["final"]["state"]["lastAttempt"]["reason"] == "summary_normalized"
    record = last_attempt(dirs)
    assert record["status"] == "compacted" and record["reason"] == "committed"
    assert record["savedTokens"] == 68000 and record["summaryNormalization"] == "extracted_block"
    assert record["plan"]["alignment"] == "user"
    assert record["ledgerCheck"]["status"] == "checked" and record["ledgerCheck"]["carriedForward"] > 0


def test_local_mode_flow_and_repeated_compaction(spawn: Any, dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text('{"mode":"local","keep_recent":2}')
    worker = spawn()
    history = long_history()
    first = run_flow(worker, history)
    summary = first["final"]["summary"]
    for fact in (
        "approval_01abc",
        f"resume = {RESUME}",
        "job_900aa",
        "src/lexer.rs",
        "E0425",
        "Do not touch CI config",
        "Port the lexer to Rust.",
    ):
        assert fact in summary, fact
    assert "hunter2hunter2" not in summary and "DB_PASSWORD" in summary
    assert len(summary) < sum(len(orjson.dumps(m)) for m in history[1 : first["cut"]]) * 0.2
    # The core commits system + summary + suffix; compacting that again keeps the facts.
    candidate = [history[0], summary_of(summary), *history[first["cut"] :]]
    candidate += [assistant("", [("d1", "shell", "{}")]), tool("d1", "run_321zz done"), assistant("a"), assistant("b")]
    second = run_flow(worker, candidate)
    assert second["planned"]["state"]["previous_summary"] == summary
    for fact in ("approval_01abc", f"resume = {RESUME}", "job_900aa", "src/lexer.rs", "run_321zz"):
        assert fact in second["final"]["summary"], fact


def test_errors_are_error_frames(spawn: Any, dirs: dict[str, str]) -> None:
    worker = spawn()
    with pytest.raises(ErrorFrame, match="invalid_summary_contract"):
        worker.call("after_compact", {"summary": "<continuation_summary></continuation_summary>", "state": {}})
    worker = spawn()
    with pytest.raises(ErrorFrame, match=r"data\.messages must be a non-empty list"):
        worker.call("before_compact", {"messages": [], "cut": 2})
    Path(dirs["config_dir"], "compact.json").write_text('{"keep_recent": 0}')
    worker = spawn()
    with pytest.raises(ErrorFrame, match=r"keep_recent must be an integer from 1 to 10000"):
        worker.call("compact_plan", {"history": long_history(), "cut": None, "budget_result": BUDGET})
    Path(dirs["config_dir"], "compact.json").write_text("{not json")
    worker = spawn()
    with pytest.raises(ErrorFrame, match="is not valid JSON"):
        worker.call("compact_plan", {"history": long_history(), "cut": None, "budget_result": BUDGET})


def test_a_typo_in_compact_json_fails_the_first_request_as_a_config_error(spawn: Any, dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text('{"mode":"lcoal"}')
    worker = spawn()
    assert "config_kind" in worker.call("hello", {"package": "test", "version": "0", "protocol": "1"})["extensions"]
    with pytest.raises(ErrorFrame) as caught:
        worker.call("after_compact_commit", {"committed": False, "reason": "x", "state": {}})
    assert caught.value.kind == "config"
    assert caught.value.message.startswith(str(Path(dirs["config_dir"], "compact.json")) + ": mode must be one of")
    assert '"lcoal"' in caught.value.message


def test_check_config_names_the_file_and_the_field(dirs: dict[str, str], tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "I_CONFIG_DIR": dirs["config_dir"]}
    result = subprocess.run([str(EXE), "--check-config"], capture_output=True, text=True, env=env)
    assert (result.returncode, result.stdout) == (
        0,
        f"config ok: {dirs['config_dir']}/compact.json absent (defaults)\n",
    )
    Path(dirs["config_dir"], "compact.json").write_text('{"mode":"lcoal"}')
    result = subprocess.run([str(EXE), "--check-config"], capture_output=True, text=True, env=env)
    assert result.returncode == 3
    assert result.stdout == (
        f'config invalid: {dirs["config_dir"]}/compact.json: mode must be one of model, local, got "lcoal"\n'
    )
    Path(dirs["config_dir"], "compact.json").write_text('{"mode":"local","prompt":"missing.txt"}')
    result = subprocess.run([str(EXE), "--check-config"], capture_output=True, text=True, env=env)
    assert result.returncode == 3 and "prompt file" in result.stdout and "missing.txt" in result.stdout


def test_declines_and_unknown_events_pass_through(spawn: Any) -> None:
    worker = spawn()
    data = worker.call(
        "compact_plan",
        {"history": long_history(), "cut": None, "budget_result": {**BUDGET, "recommend_compact": False}},
    )
    assert data["cut"] is None and data["reason"] == "not_recommended"
    assert worker.call("before_save", {"messages": [], "path": "x"}) == {"messages": [], "path": "x"}


def test_fit_chunks_and_final_records_through_the_process(spawn: Any, dirs: dict[str, str], tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    context = {"workspace": str(project)}
    worker = spawn()
    history = [system(), user("Port the lexer to Rust.")]
    for i in range(30):
        history += [
            assistant(f"step {i} " + "thinking " * 30, [(f"c{i}", "shell", '{"cmd":"cargo test"}')]),
            tool(f"c{i}", f"job_{i:04d} running\n" + "log line\n" * 60),
        ]
    history += [user("Also the docs."), assistant("x" * 30000), user("Keep going."), assistant("ok")]
    # 1 token per byte of JSON; the huge assistant message keeps keep_recent (4) from fitting.
    costs = [len(orjson.dumps(m)) for m in history]
    suffix = [[i, sum(costs[i:])] for i in range(2, len(history)) if history[i]["role"] in ("user", "assistant")]
    newest = len(history) - 2
    capacity = 15000
    assert suffix[-4][1] > capacity > 200 + 2000 + 47 + sum(costs[newest:])
    result = {
        **BUDGET,
        "capacity": capacity,
        "output_reserve": 2000,
        "cut_estimates": {"fixed_tokens": 200, "tokens_per_byte": 1.0, "suffix": suffix},
    }
    data = {"model": "m", "budget": {}, "history": history, "tools": [], "cut": None, "budget_result": result}
    planned = worker.call("compact_plan", data, context=context)
    assert planned["cut"] == newest and planned["state"]["lastAttempt"]["reason"] == "keep_recent_reduced"
    cut = planned["cut"]
    prepared = worker.call(
        "before_compact",
        {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "m", "budget": {}},
        context=context,
    )
    assert "prompt" not in prepared and len(prepared["chunks"]) >= 2
    assert prepared["state"]["lastAttempt"]["reason"] == "model_chunks_prepared"
    final = worker.call(
        "after_compact",
        {"summary": "<continuation_summary>\nlexer; job_0029\n</continuation_summary>", "state": prepared["state"]},
        context=context,
    )
    refused = {
        "committed": False,
        "reason": "the compacted history does not fit the context budget",
        "check": "candidate_over_budget",
        "cut": cut,
        "comparable_before": 88000,
        "comparable_after": None,
        "state": final["state"],
    }
    assert worker.call("after_compact_commit", refused, context=context) == refused
    assert last_attempt(dirs)["reason"] == "refused_by_core:candidate_over_budget"
    again = worker.call(
        "compact_plan", {**data, "previous_attempt": {"cut": cut, "reason": "candidate_over_budget"}}, context=context
    )
    assert again["cut"] is None and again["reason"] == "suffix_over_budget"
    assert f"No cut later than history[{cut}]" in again["detail"]
    declined = {**refused, "check": "declined", "reason": again["reason"], "cut": None, "state": again["state"]}
    worker.call("after_compact_commit", declined, context=context)
    record = last_attempt(dirs)
    assert record["status"] == "skipped" and record["reason"] == "suffix_over_budget"
    assert record["previousAttempt"] == {"cut": cut, "reason": "candidate_over_budget"}
    (history_file,) = Path(dirs["data_dir"]).glob("workspaces/*/compact/attempts.json")
    assert [r["status"] for r in orjson.loads(history_file.read_bytes())["records"]] == ["failed", "skipped"]
