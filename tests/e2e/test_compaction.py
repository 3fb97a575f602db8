"""A long task survives a full context window: the real budget and compact workers with the core."""

from __future__ import annotations

import orjson
import pytest

from i_scripted import ScriptedModel

FILLER = "The build log said: " + "step ok; " * 150  # ~1.4 KB per user message


def responder(summaries: list[dict]):
    """A model that answers every turn briefly and writes a summary when asked for one."""

    def step(request: dict) -> dict:
        messages = request.get("messages", [])
        if not request.get("tools"):
            summaries.append(request)
            return {
                "text": "<continuation_summary>\n## Latest user request\nkeep counting turns\n"
                "## Next step\nanswer the next turn\n</continuation_summary>"
            }
        turn = sum(1 for m in messages if m.get("role") == "user")
        # Usage is counted by content (~4 bytes a token here), as a real server reports it.
        return {"text": f"noted turn {turn}"}

    return step


def run_turns(i, project, count: int):
    results = []
    for n in range(count):
        result = i("-C", str(project), "--session-name", "long", f"turn {n}: {FILLER}")
        results.append(result)
        if result.returncode != 0:
            break
    return results


def session(project):
    return orjson.loads((project / ".i" / "sessions" / "long.json").read_bytes())


@pytest.mark.parametrize("mode", ["model", "local"])
def test_long_session_compacts_and_keeps_going(i, write_config, plugins, project, dirs, mode):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": mode}))
    summaries: list[dict] = []
    with ScriptedModel([responder(summaries)] * 60, context_window=6000) as model:
        write_config(model.base_url, max_tokens=256, budget={"context_window": 6000})
        results = run_turns(i, project, 20)
    assert all(r.returncode == 0 for r in results), results[-1].stderr
    saved = session(project)["messages"]
    summary = [m for m in saved if isinstance(m.get("_compaction"), dict)]
    assert len(summary) == 1, "the session was never compacted (or its summary was lost)"
    assert "<continuation_summary>" in summary[0]["content"] and summary[0]["role"] == "user"
    assert saved[0]["role"] == "system"
    # The newest turns are intact after the summary.
    assert saved[-2]["content"].startswith("turn 19:")
    assert saved[-1]["role"] == "assistant" and saved[-1]["content"].startswith("noted turn")
    backup = project / ".i" / "sessions" / "long.precompact.json"
    assert backup.exists()
    assert len(orjson.loads(backup.read_bytes())["messages"]) > 4
    if mode == "model":
        assert summaries, "no summary request was made"
        wrapped = summaries[0]["messages"][-1]["content"]
        assert "<untrusted_transcript>" in wrapped and "turn 0:" in wrapped
        assert "tools" not in summaries[0] or not summaries[0]["tools"]
    else:
        assert summaries == []  # local mode never asks the model


def test_agents_md_reaches_history_0_of_a_new_session_and_survives_a_compaction(
    i, write_config, plugins, project, dirs
):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
    (project / ".git").mkdir(exist_ok=True)
    (project / "AGENTS.md").write_text("Run the tests with make check. MARKER-AGENTS-42\n")
    requests: list[dict] = []

    def step(request: dict) -> dict:
        requests.append(request)
        return {"text": "noted"}

    with ScriptedModel([step] * 60, context_window=6000) as model:
        write_config(model.base_url, max_tokens=256, budget={"context_window": 6000})
        results = run_turns(i, project, 20)
    assert all(r.returncode == 0 for r in results), results[-1].stderr
    saved = session(project)["messages"]
    assert any(isinstance(m.get("_compaction"), dict) for m in saved), "the session was never compacted"
    assert "MARKER-AGENTS-42" in saved[0]["content"] and saved[0]["role"] == "system"
    assert all("MARKER-AGENTS-42" in r["messages"][0]["content"] for r in requests)
    assert 'AGENTS.md">' in saved[0]["content"]


def test_summary_with_tool_calls_commits_nothing(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2}))

    def step(request: dict) -> dict:
        if not request.get("tools"):
            return {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf /"}}]}
        return {"text": "ok"}

    with ScriptedModel([step] * 60, context_window=6000) as model:
        write_config(model.base_url, max_tokens=256, budget={"context_window": 6000})
        results = run_turns(i, project, 30)
    failed = results[-1]
    assert failed.returncode == 5, failed.stderr
    assert "summary reply asked for tool calls" in failed.stderr
    saved = session(project)["messages"]
    assert not any(isinstance(m.get("_compaction"), dict) for m in saved)
    assert not (project / ".i" / "sessions" / "long.precompact.json").exists()


def test_compact_on_demand(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
    with ScriptedModel([{"text": f"answer {n}"} for n in range(4)]) as model:
        write_config(model.base_url)
        for n in range(4):
            assert i("-C", str(project), "--session-name", "long", f"turn {n}: {FILLER}").returncode == 0
    before = session(project)["messages"]
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "long")
    assert result.returncode == 0, result.stderr
    assert "compacted" in result.stdout
    after = session(project)["messages"]
    assert len(after) < len(before)
    assert after[-2:] == before[-2:]
