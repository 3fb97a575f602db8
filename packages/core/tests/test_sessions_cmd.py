"""`i --continue`, `i --runtime sessions` and `i "task" --json`."""

from __future__ import annotations

import os
import time

import orjson

from i_protocol.jsonsafe import loads_safe
from i_scripted import ScriptedModel


def _config(dirs, model, **extra):
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m", **extra})
    )


def _age(path, seconds):
    stamp = time.time() - seconds
    os.utime(path, (stamp, stamp))


def test_continue_resumes_the_most_recently_saved_session(run_i, dirs, project):
    steps = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        assert run_i("-C", str(project), "--session-name", "older", "first").returncode == 0
        assert run_i("-C", str(project), "--session-name", "newer", "second").returncode == 0
        sessions = project / ".i" / "sessions"
        _age(sessions / "older.json", 10)
        _age(sessions / "newer.json", 100)  # "older" is now the most recent by mtime
        done = run_i("-C", str(project), "--continue", "third")
        assert done.returncode == 0, done.stderr
    assert b"continuing " in done.stderr and b"older.json" in done.stderr
    sent = [m["content"] for m in model.requests[2].body["messages"] if m["role"] != "system"]
    assert sent == ["first", "one", "third"]
    assert len(loads_safe((sessions / "older.json").read_bytes())["messages"]) == 5


def test_continue_skips_sessions_of_another_workspace_and_says_when_there_is_none(run_i, dirs, project, tmp_path):
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        _config(dirs, model)
        assert run_i("-C", str(project), "--session-name", "mine", "hello").returncode == 0
        other = tmp_path / "other"
        other.mkdir()
        # A session file of another workspace copied into this project, and newer.
        stranger = project / ".i" / "sessions" / "stranger.json"
        doc = loads_safe((project / ".i" / "sessions" / "mine.json").read_bytes())
        stranger.write_bytes(orjson.dumps({**doc, "workspace_id": "0" * 8}))
        _age(project / ".i" / "sessions" / "mine.json", 50)
        done = run_i("-C", str(project), "--continue", "again")
        assert done.returncode == 0, done.stderr
        assert b"mine.json" in done.stderr
        nothing = run_i("-C", str(other), "--continue", "x")
    assert nothing.returncode == 3
    assert b"no saved session of this workspace to continue" in nothing.stderr


def test_sessions_lists_name_activity_messages_size_and_compactions(run_i, dirs, project):
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        _config(dirs, model)
        assert run_i("-C", str(project), "--session-name", "alpha", "hi").returncode == 0
        assert run_i("-C", str(project), "beta in the state folder").returncode == 0
    sessions = project / ".i" / "sessions"
    doc = loads_safe((sessions / "alpha.json").read_bytes())
    doc["messages"].insert(1, {"role": "user", "content": "summary", "_compaction": {"cut": 1}})
    (sessions / "alpha.json").write_bytes(orjson.dumps(doc))
    (sessions / "alpha.precompact.json").write_bytes(orjson.dumps(doc))
    (sessions / "stranger.json").write_bytes(orjson.dumps({**doc, "workspace_id": "x"}))
    _age(sessions / "stranger.json", 1000)
    listed = run_i("--runtime", "sessions", "-C", str(project))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.decode().splitlines()
    assert lines[0].split() == ["NAME", "LAST", "ACTIVITY", "MESSAGES", "SIZE", "COMPACTIONS", "TITLE"]
    alpha = next(line for line in lines if line.startswith("alpha "))
    assert " 4 " in alpha and "1 +backup" in alpha and alpha.endswith("named")
    assert " hi " in alpha  # the title: the first request, not the summary
    assert any(" beta in the state folder " in line and line.endswith("default") for line in lines)
    assert any(line.endswith("default") for line in lines[1:])
    assert "another workspace" in lines[-1] and lines[-1].startswith("stranger")
    data = orjson.loads(run_i("--runtime", "sessions", "-C", str(project), "--json").stdout)
    by_name = {entry["name"]: entry for entry in data}
    assert by_name["alpha"]["compactions"] == 1 and by_name["alpha"]["precompact_backup"] is True
    assert by_name["alpha"]["messages"] == 4 and by_name["alpha"]["problem"] is None
    assert by_name["alpha"]["title"] == "hi"
    assert "another workspace" in by_name["stranger"]["problem"]
    assert data[-1]["name"] == "stranger"  # the oldest last


def test_json_prints_one_object_on_stdout_and_nothing_else(run_i, dirs, project):
    steps = [{"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}, {"text": "the answer"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        done = run_i("-C", str(project), "--session-name", "j", "read it", "--json")
    assert done.returncode == 0, done.stderr
    result = orjson.loads(done.stdout)  # the whole of stdout is one JSON document
    assert done.stdout.count(b"\n") == 1
    assert result["answer"] == "the answer" and result["exit"] == 0 and result["error"] is None
    assert result["tool_calls"] == ["read"]
    assert result["usage"]["requests"] == 2 and result["usage"]["input_tokens"] > 0
    assert result["usage"]["last"]["output_tokens"] >= 1
    assert result["session"].endswith("j.json") and result["compactions"] == 0


def test_json_reports_a_failure_with_its_exit_code(run_i, dirs, project):
    with ScriptedModel([{"status": 500, "error_message": "boom"}] * 5) as model:
        _config(dirs, model, retries=0)
        done = run_i("-C", str(project), "hello", "--json")
    assert done.returncode == 4
    result = orjson.loads(done.stdout)
    assert result["exit"] == 4 and result["answer"] is None and result["session"] is None
    assert result["error"] and b"i: " in done.stderr


def test_session_name_of_a_default_session_is_an_error_naming_it_and_resume_takes_it(run_i, dirs, project):
    with ScriptedModel([{"text": "one"}, {"text": "two"}, {"text": "three"}]) as model:
        _config(dirs, model)
        assert run_i("-C", str(project), "first request").returncode == 0
        listed = orjson.loads(run_i("--runtime", "sessions", "-C", str(project), "--json").stdout)
        name, path = listed[0]["name"], listed[0]["path"]
        clash = run_i("-C", str(project), "--session-name", name, "again")
        assert clash.returncode == 3
        line = clash.stderr.decode()
        assert f"the default sessions have one: {path}" in line and f"`i --resume {name}`" in line
        assert not (project / ".i" / "sessions" / f"{name}.json").exists()  # nothing was created
        resumed = run_i("-C", str(project), "--resume", name, "again")
        assert resumed.returncode == 0, resumed.stderr
        assert len(model.requests[-1].body["messages"]) == 4  # system, first request, answer, again
        assert run_i("-C", str(project), "--session-name", "alpha", "named one").returncode == 0
        assert run_i("-C", str(project), "--resume", "nope", "x").returncode == 3
    assert len(model.requests) == 3
