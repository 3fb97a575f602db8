"""Long sessions at real token density: the scripted model counts tokens by content and enforces its context.

Every turn is a separate `i` process on the same session, as a user runs it. The model refuses a
request that does not fit exactly as a real server does, so a budget that under-counts shows up
as a refusal and one that over-counts as a session that stops fitting.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from long_task import LongTask, kept

from i_scripted import ScriptedModel, prompt_tokens

CASES = [
    pytest.param("english", 32_000, "model", 10_000, id="english-32k-model"),
    pytest.param("english", 32_000, "local", 10_000, id="english-32k-local"),
    pytest.param("chinese", 16_000, "model", 6_000, id="chinese-16k-model"),
    pytest.param("chinese", 16_000, "local", 6_000, id="chinese-16k-local"),
    pytest.param("ids", 32_000, "model", 8_000, id="ids-32k-model"),
    pytest.param("english", 8_192, "local", 3_000, id="english-8k-local"),
]


def session_of(project: Path, name: str = "long") -> dict:
    return orjson.loads((project / ".i" / "sessions" / f"{name}.json").read_bytes())


def run_session(i, project: Path, task: LongTask, turns: int, files: list[str]) -> list:
    results = []
    for turn in range(turns):
        read = files[turn % len(files)] if turn % 3 == 2 else None
        result = i("-C", str(project), "--session-name", "long", task.note(turn, read=read))
        results.append(result)
        if result.returncode != 0:
            break
    return results


@pytest.mark.parametrize(("kind", "window", "mode", "note_bytes"), CASES)
def test_long_session_survives_a_full_window(i, write_config, plugins, project, dirs, kind, window, mode, note_bytes):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 4, "mode": mode}))
    task = LongTask(kind, note_bytes=note_bytes)
    files = task.write_files(project)
    with ScriptedModel([task.respond] * 400, context_window=window) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": window})
        results = run_session(i, project, task, 24, files)
        summaries = [r for r in model.requests if not r.body.get("tools")]
        rejections = model.rejections
    assert all(r.returncode == 0 for r in results), (len(results), results[-1].stderr)
    assert rejections == 0, f"the server refused {rejections} request(s) as too long"
    saved = session_of(project)["messages"]
    assert sum(1 for m in saved if isinstance(m.get("_compaction"), dict)) == 1
    assert (project / ".i" / "sessions" / "long.precompact.json").exists()
    newest = [m for m in saved if m["role"] == "user" and str(m.get("content")).startswith("Turn 23:")]
    assert len(newest) == 1 and saved[-1]["role"] == "assistant"
    if mode == "model":
        assert summaries, "no summary request was sent"
        # A diligent model's summaries keep every planted id; the session must still hold them all.
        found, planted = kept(task, saved, 24)
        assert found == planted, f"{planted - found} planted id(s) vanished"
    else:
        assert summaries == []
    assert "compaction(s) of" in results[-1].stderr


def test_a_refusal_is_learned_compacted_and_sent_again(i, write_config, plugins, project, dirs):
    # budget.context_window says 32000, but the server's context is 12000: every refusal is
    # recovered once (the budget learns the server's count, compaction runs, the request is new).
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
    task = LongTask("english", note_bytes=6_000)
    with ScriptedModel([task.respond] * 200, context_window=12_000) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 32_000})
        results = run_session(i, project, task, 14, task.write_files(project))
        rejections = model.rejections
    assert all(r.returncode == 0 for r in results), results[-1].stderr
    assert 1 <= rejections <= len(results)  # never more than one refusal per turn: one recovery each
    assert any("context-length refusal(s)" in r.stderr for r in results)
    saved = session_of(project)["messages"]
    assert any(isinstance(m.get("_compaction"), dict) for m in saved)


def test_a_second_refusal_fails_cleanly_and_the_session_goes_on(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
    task = LongTask("english", note_bytes=3_000)

    def refusal(body: dict) -> dict:
        # A server that says its context is one token short of this very request, by its own count.
        count = prompt_tokens("openai", body)
        return {
            "status": 400,
            "error_type": "invalid_request_error",
            "error_message": f"This model's maximum context length is {count - 1} tokens. However, your "
            f"messages resulted in {count} tokens. Please reduce the length of the messages.",
        }

    script = [task.respond] * 4 + [refusal, refusal] + [task.respond] * 4
    with ScriptedModel(script) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 32_000})
        for turn in range(4):
            assert i("-C", str(project), "--session-name", "long", task.note(turn)).returncode == 0
        failed = i("-C", str(project), "--session-name", "long", task.note(4))
        after_failure = session_of(project)["messages"]
        again = i("-C", str(project), "--session-name", "long", task.note(5))
    assert failed.returncode == 4, failed.stderr
    assert "too long again after compaction" in failed.stderr
    assert "Traceback" not in failed.stderr
    # The one reactive compaction committed a complete checkpoint; the refused turn left nothing half-done.
    assert any(isinstance(m.get("_compaction"), dict) for m in after_failure)
    assert after_failure[-1]["role"] in ("user", "assistant")
    assert again.returncode == 0, again.stderr
    assert session_of(project)["messages"][-1]["content"].startswith("Done with turn 5")


def test_a_message_too_big_for_any_cut_is_named_and_the_session_is_unchanged(i, write_config, plugins, project, dirs):
    plugins("compact")
    task = LongTask("english", note_bytes=2_000)
    with ScriptedModel([task.respond] * 20, context_window=8_192) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 8_192})
        for turn in range(3):
            assert i("-C", str(project), "--session-name", "long", task.note(turn)).returncode == 0
        before = (project / ".i" / "sessions" / "long.json").read_bytes()
        huge = LongTask("english", seed=9, note_bytes=120_000).note(3)
        result = i("-C", str(project), "--session-name", "long", huge)
        after = (project / ".i" / "sessions" / "long.json").read_bytes()
        next_turn = i("-C", str(project), "--session-name", "long", task.note(4))
    assert result.returncode == 5, result.stderr
    assert "history[" in result.stderr and "bytes" in result.stderr and "capacity" in result.stderr
    assert "unchanged" in result.stderr and "Traceback" not in result.stderr
    assert after == before
    assert next_turn.returncode == 0, next_turn.stderr


def last_attempt(dirs) -> dict:
    found = list((dirs["data"] / "workspaces").glob("*/compact/last-attempt.json"))
    assert len(found) == 1, found
    return orjson.loads(found[0].read_bytes())


def attempts(dirs) -> list[dict]:
    found = list((dirs["data"] / "workspaces").glob("*/compact/attempts.json"))
    assert len(found) == 1, found
    return orjson.loads(found[0].read_bytes())["records"]


def test_a_prefix_too_big_for_one_summary_request_is_summarised_in_chunks(i, write_config, plugins, project, dirs):
    # A long session built for a 64k model, continued on a 12k one: the prefix needs several requests.
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "model"}))
    task = LongTask("english", note_bytes=10_000)
    with ScriptedModel([task.respond] * 40, context_window=64_000) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 64_000})
        for turn in range(18):
            assert i("-C", str(project), "--session-name", "long", task.note(turn)).returncode == 0
    with ScriptedModel([task.respond] * 40, context_window=12_000) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 12_000})
        result = i("-C", str(project), "--session-name", "long", task.note(18))
        summaries = [r.body for r in model.requests if not r.body.get("tools")]
        rejections = model.rejections
    assert result.returncode == 0, result.stderr
    assert rejections == 0
    assert len(summaries) >= 3, f"{len(summaries)} summary request(s)"
    assert not summaries[0]["messages"][1]["content"].startswith("Below is the summary so far")
    assert all(s["messages"][1]["content"].startswith("Below is the summary so far") for s in summaries[1:])
    saved = session_of(project)["messages"]
    found, planted = kept(task, saved, 19)
    assert found == planted
    record = last_attempt(dirs)
    assert record["status"] == "compacted", record


def test_keep_recent_gives_way_only_when_no_candidate_keeping_it_fits(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 24, "mode": "local"}))
    task = LongTask("english", note_bytes=10_000)
    with ScriptedModel([task.respond] * 80, context_window=32_000) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 32_000})
        results = [i("-C", str(project), "--session-name", "long", task.note(turn)) for turn in range(16)]
        rejections = model.rejections
    assert all(r.returncode == 0 for r in results), [r.stderr for r in results if r.returncode][:1]
    assert rejections == 0
    saved = session_of(project)["messages"]
    summary = next(index for index, m in enumerate(saved) if isinstance(m.get("_compaction"), dict))
    assert len(saved) - summary - 1 < 24  # fewer than keep_recent messages stayed: it had to give way
    history = attempts(dirs)
    committed = [r for r in history if r["status"] == "compacted"]
    assert committed and all(r["plan"]["reason"] == "keep_recent_reduced" for r in committed), committed
    # Before the window was full, keep_recent held: those attempts were skipped, not forced through.
    assert any(r["status"] == "skipped" for r in history)


def test_an_empty_summary_commits_nothing(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "model"}))
    task = LongTask("english", note_bytes=10_000)
    empty = {"text": "<continuation_summary>\n\n</continuation_summary>"}

    def respond(request: dict) -> dict:
        return empty if not request.get("tools") else task.respond(request)

    with ScriptedModel([respond] * 80, context_window=32_000) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": 32_000})
        results = [i("-C", str(project), "--session-name", "long", task.note(turn)) for turn in range(12)]
        summaries = sum(1 for r in model.requests if not r.body.get("tools"))
    assert summaries >= 1
    saved = session_of(project)["messages"]
    assert not any(isinstance(m.get("_compaction"), dict) for m in saved)  # nothing committed, nothing lost
    assert not (project / ".i" / "sessions" / "long.precompact.json").exists()
    found, planted = kept(task, saved, len([r for r in results if r.returncode == 0]))
    assert found == planted
    record = last_attempt(dirs)
    assert record["status"] == "failed" and record["reason"] == "invalid_summary_contract", record
    failed = [r for r in results if r.returncode != 0]
    assert failed and "compaction did not help" in failed[-1].stderr  # the session filled up and said why


def _inflate(project: Path, name: str, megabytes: float) -> int:
    """Grow a saved session to about ``megabytes`` of real text (as a very long task would)."""
    path = project / ".i" / "sessions" / f"{name}.json"
    doc = orjson.loads(path.read_bytes())
    task = LongTask("english", seed=3, note_bytes=20_000)
    turn = 0
    while path.stat().st_size < megabytes * 1e6:
        for _ in range(200):
            doc["messages"] += [
                {"role": "user", "content": task.note(turn)},
                {"role": "assistant", "content": f"Done with turn {turn}; noted."},
            ]
            turn += 1
        doc["meta"].pop("usage_anchor", None)
        path.write_bytes(orjson.dumps(doc))
    return len(doc["messages"])


def test_compact_on_demand_works_on_a_huge_session_and_says_when_it_is_too_big(i, write_config, plugins, project, dirs):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 4, "mode": "local"}))
    with ScriptedModel([{"text": "ok"}] * 4) as model:
        write_config(model.base_url, max_tokens=1024, budget={"context_window": 1_000_000})
        assert i("-C", str(project), "--session-name", "big", "hello").returncode == 0
        assert i("-C", str(project), "--session-name", "huge", "hello").returncode == 0
    _inflate(project, "big", 20)
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "big")
    assert result.returncode == 0, result.stderr
    assert "compacted" in result.stdout
    assert (project / ".i" / "sessions" / "big.json").stat().st_size < 1_000_000
    _inflate(project, "huge", 51)
    before = (project / ".i" / "sessions" / "huge.json").read_bytes()
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "huge")
    assert result.returncode == 1
    assert "more than the 48 MiB frame" in result.stdout and "Traceback" not in result.stderr
    assert (project / ".i" / "sessions" / "huge.json").read_bytes() == before
