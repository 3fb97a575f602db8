"""Session and turn on tool events (``turn_context``), the ``undo`` event, ``i --runtime undo``:
the core's side, against a test checkpoint worker bound through bindings.json."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import orjson

from i_protocol.jsonsafe import loads_safe
from i_scripted import ScriptedModel

HERE = Path(__file__).parent
WORKER = str(HERE / "workers" / "turn_worker.py")


def _setup(dirs: dict[str, Path], model: ScriptedModel, log: Path, *extra: str) -> None:
    config = dirs["config"]
    (config / "config.json").write_bytes(orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m"}))
    (config / "plugins.json").write_bytes(orjson.dumps({"profile": "checkpoint"}))
    (config / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
    binding = {"checkpoint": {"exec": [sys.executable, WORKER, str(log), *extra]}}
    (config / "bindings.json").write_bytes(orjson.dumps(binding))


def _log(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _steps() -> list[dict[str, Any]]:
    write = {"name": "write", "arguments": {"path": "n.txt", "content": "n"}}
    return [{"tool_calls": [write]}, {"text": "one"}, {"tool_calls": [write]}, {"text": "two"}]


def test_a_worker_that_declared_turn_context_gets_session_and_turn_and_its_notice_is_shown(
    run_i, dirs, project, tmp_path
):
    log = tmp_path / "log"
    with ScriptedModel(_steps()) as model:
        _setup(dirs, model, log)
        first = run_i("-C", str(project), "--session-name", "s", "--yolo", "first")
        second = run_i("-C", str(project), "--session-name", "s", "--yolo", "second")
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    seen = [entry["data"] for entry in _log(log)]
    assert [(d["turn"], "session" in d) for d in seen] == [(1, True), (1, True), (2, True), (2, True)]
    assert len({d["session"] for d in seen}) == 1
    assert b"fake: turn 1 is noted" in first.stderr
    doc = loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())
    assert doc["meta"]["turn"] == 2 and doc["meta"]["id"] == seen[0]["session"]
    assert [m.get("_turn") for m in doc["messages"] if m["role"] == "user"] == [1, 2]
    # The model never sees the turn marks.
    assert all("_turn" not in m for m in model.requests[-1].body["messages"])


def test_a_worker_that_did_not_declare_it_gets_neither_field(run_i, dirs, project, tmp_path):
    log = tmp_path / "log"
    with ScriptedModel(_steps()[:2]) as model:
        _setup(dirs, model, log, "silent")
        done = run_i("-C", str(project), "--session-name", "s", "--yolo", "first")
    assert done.returncode == 0, done.stderr
    seen = [entry["data"] for entry in _log(log)]
    assert seen and all("turn" not in d and "session" not in d for d in seen)
    assert b"fake:" not in done.stderr
    undo = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--yes")
    assert undo.returncode == 3 and b"did not declare the 'undo' extension" in undo.stderr


def test_undo_cuts_the_conversation_before_the_turn_and_refuses_it_twice(run_i, dirs, project, tmp_path):
    log = tmp_path / "log"
    with ScriptedModel(_steps()) as model:
        _setup(dirs, model, log)
        assert run_i("-C", str(project), "--session-name", "s", "--yolo", "first").returncode == 0
        assert run_i("-C", str(project), "--session-name", "s", "--yolo", "second").returncode == 0
    preview = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    assert b"undo turn 2" in preview.stdout and b"not undoable: fake" in preview.stdout
    refused = run_i("--runtime", "undo", "-C", str(project), "--session", "s")  # no terminal, no --yes
    assert refused.returncode == 1 and b"--yes" in refused.stderr
    done = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--turn", "2", "--yes")
    assert done.returncode == 0, done.stderr
    doc = loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())
    assert doc["messages"][1]["content"] == "first" and len(doc["messages"]) == 5
    assert doc["meta"]["undone"] == [[2, 2]]
    undos = [entry["data"] for entry in _log(log) if entry["event"] == "undo"]
    assert [(u["turn"], u["dry_run"]) for u in undos] == [(2, True), (2, True), (2, True), (2, False)]
    again = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--turn", "2", "--yes")
    assert again.returncode == 3 and b"undone already" in again.stderr


def test_a_turn_inside_a_compacted_span_is_refused_clearly(run_i, dirs, project, tmp_path):
    log = tmp_path / "log"
    with ScriptedModel(_steps()[:2]) as model:
        _setup(dirs, model, log)
        assert run_i("-C", str(project), "--session-name", "s", "--yolo", "first").returncode == 0
    path = project / ".i" / "sessions" / "s.json"
    doc = loads_safe(path.read_bytes())
    summary = {"role": "user", "content": "[summary of turns 1-2]", "_compaction": {"kind": "summary"}}
    doc["messages"] = [doc["messages"][0], summary, {**doc["messages"][1], "_turn": 3}, doc["messages"][-1]]
    doc["meta"]["turn"] = 3
    path.write_bytes(orjson.dumps(doc))
    done = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--turn", "2", "--yes")
    assert done.returncode == 3 and b"inside a compacted span" in done.stderr and b"undone: 3" in done.stderr
    missing = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--turn", "9", "--yes")
    assert missing.returncode == 3 and b"no turn 9" in missing.stderr
    assert not [entry for entry in _log(log) if entry["event"] == "undo"]


def test_without_the_checkpoint_module_undo_is_an_error_naming_it(run_i, dirs, project, tmp_path):
    with ScriptedModel([{"text": "hi"}]) as model:
        (dirs["config"] / "config.json").write_bytes(
            orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m"})
        )
        assert run_i("-C", str(project), "--session-name", "s", "hello").returncode == 0
    done = run_i("--runtime", "undo", "-C", str(project), "--session", "s", "--yes")
    assert done.returncode == 3 and b"needs the checkpoint module" in done.stderr
    assert len(loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())["messages"]) == 3
