"""``--output-format stream-json``: every event of real sessions (tool calls, an approval policy, a
diff, a compaction; a task, stdin line mode, ``--continue``) valid against the schema file in docs/."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest

from i_protocol.jsonsafe import loads_safe
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

HERE = Path(__file__).parent
SCHEMA = json.loads((HERE.parent / "docs" / "stream-json.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
LONG = "word " * 400


@pytest.fixture
def run(dirs, project, tmp_path, write_manifest):
    behaviour = tmp_path / "behaviour.json"
    behaviour.write_text("{}")
    compactor = [sys.executable, str(HERE / "workers" / "fake_compactor.py"), str(behaviour)]
    compact_events = ["context_budget", "compact_plan", "before_compact", "after_compact"]
    approval = [sys.executable, "-m", "i_core", "--runtime", "worker", "approval"]
    manifest = write_manifest(
        {"hooks": [{"events": compact_events, "exec": compactor}, {"events": ["tool_approval"], "exec": approval}]}
    )
    (dirs["config"] / "approval.json").write_text('{"mode":"auto","deny_tools":["shell"]}')

    def invoke(base_url: str, *args: str | bytes, stdin: bytes | None = None, behave: dict | None = None):
        behaviour.write_text(json.dumps(behave or {}))
        config = {"protocol": "openai", "base_url": base_url, "model": "m", "stream": True, "retries": 0}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        argv = [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest)]
        return subprocess.run(
            [*argv, "--output-format", "stream-json", *args],
            env=dict(os.environ),
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            timeout=scaled(120),
        )

    return invoke


def events_of(result: subprocess.CompletedProcess[bytes]) -> list[dict[str, Any]]:
    """Every stdout line is one schema-valid event; the first names the schema, the last is final."""
    lines = result.stdout.splitlines()
    assert lines, result.stderr
    events = [loads_safe(line) for line in lines]  # a lone surrogate's \\udcXX escape included
    for event in events:
        VALIDATOR.validate(event)
        assert event["type"] in SCHEMA["$defs"]["known_types"]["enum"]
    assert events[0] == {"type": "start", "schema": "i-stream/1", "version": events[0]["version"]}
    assert events[-1]["type"] == "final" and events[-1]["exit"] == result.returncode
    assert sum(e["type"] == "final" for e in events) == 1
    return events


def of(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [event for event in events if event["type"] == kind]


def test_a_session_with_tools_an_approval_a_diff_and_a_compaction_streams_valid_events(run, project) -> None:
    (project / "a.txt").write_text("one\ntwo\n")
    calls = [
        {"name": "read", "arguments": {"path": "README.md"}, "id": "c1"},
        {"name": "edit", "arguments": {"path": "a.txt", "old_string": "two", "new_string": "three"}, "id": "c2"},
        {"name": "shell", "arguments": {"command": "echo hi"}, "id": "c3"},
    ]
    steps = [{"text": "hello there"}, {"tool_calls": calls}, {"text": "edited"}, {"text": "first"}, {"text": "2nd"}]
    with ScriptedModel(steps) as model:
        first = run(model.base_url, "--session-name", "s", "turn 0 " + LONG)
        second = run(model.base_url, "--session-name", "s", "change a.txt " + LONG)
        # Line mode and --continue: the first line's request does not fit, and is compacted.
        third = run(
            model.base_url,
            "--continue",
            stdin=b"again " + LONG.encode() + b"\n\nand once more\n",
            behave={"fits_over": 4500, "cut": "keep_two"},  # two long requests do not fit
        )
    assert first.returncode == 0, first.stderr
    one = events_of(first)
    assert [e["type"] for e in one] == [
        "start",
        "session",
        "request",
        "model_request",
        *["delta"] * len(of(one, "delta")),
        "assistant",
        "usage",
        "turn_end",
        "final",
    ]
    assert "".join(e["text"] for e in of(one, "delta")) == "hello there" == of(one, "turn_end")[0]["answer"]
    assert one[-1]["answer"] == "hello there" and one[-1]["session"].endswith("s.json")
    assert of(one, "session")[0]["continued"] is False

    assert second.returncode == 0, second.stderr
    two = events_of(second)
    assert of(two, "session")[0]["continued"] is True
    assert of(two, "assistant")[0]["tool_call_ids"] == ["c1", "c2", "c3"]
    assert [(e["id"], e["name"]) for e in of(two, "tool_call")] == [("c1", "read"), ("c2", "edit"), ("c3", "shell")]
    approvals = {e["id"]: e for e in of(two, "approval")}
    assert approvals["c1"]["decision"] == "allow" and approvals["c1"]["asked"] is False
    assert approvals["c2"]["decision"] == "allow" and approvals["c2"]["asked"] is True
    assert approvals["c3"]["decision"] == "deny" and "approval policy" in approvals["c3"]["reason"]
    results = {e["id"]: e for e in of(two, "tool_result")}
    assert results["c2"]["diff"].splitlines() == [
        "--- a/a.txt",
        "+++ b/a.txt",
        "@@ -1,2 +1,2 @@",
        " one",
        "-two",
        "+three",
    ]
    assert results["c3"]["is_error"] is True and "diff" not in results["c3"] and "diff" not in results["c1"]
    assert (project / "a.txt").read_text() == "one\nthree\n"
    order = [(e["type"], e.get("id")) for e in two if e["type"] in ("tool_call", "approval", "tool_result")]
    assert order.index(("tool_call", "c2")) < order.index(("approval", "c2")) < order.index(("tool_result", "c2"))
    assert two[-1]["usage"]["requests"] == 2

    assert third.returncode == 0, third.stderr.decode()
    three = events_of(third)
    assert [e["text"] for e in of(three, "request")] == ["again " + LONG.strip(), "and once more"]
    assert [e["answer"] for e in of(three, "turn_end")] == ["first", "2nd"]
    compaction = of(three, "compaction")
    assert compaction and compaction[0]["committed"] is True
    assert compaction[0]["messages_after"] < compaction[0]["messages_before"]
    assert three.index(compaction[0]) < three.index(of(three, "model_request")[0])
    assert of(three, "session")[0]["continued"] is True
    # stdout holds events only: the summary and notes are on stderr.
    assert b"model request(s)" in third.stderr and b"model request(s)" not in third.stdout


def test_a_failed_run_ends_with_an_error_event_and_the_exit_code(run, project) -> None:
    with ScriptedModel([{"status": 400, "error_message": "bad request"}]) as model:
        result = run(model.base_url, "hi")
    assert result.returncode != 0
    events = events_of(result)
    errors = of(events, "error")
    assert len(errors) == 1 and errors[0]["exit"] == result.returncode
    assert events[-2] == errors[0]


def test_undecodable_bytes_are_escaped_as_jsonsafe_writes_them_and_model_reaches_the_body(run, project) -> None:
    with ScriptedModel([{"text": "ok"}]) as model:
        result = run(model.base_url, "--model", "other-7b", b"caf\xe9")
    assert result.returncode == 0, result.stderr
    assert b'"text":"caf\\udce9"' in result.stdout
    events = events_of(result)
    assert of(events, "request")[0]["text"] == "caf\udce9"
    assert of(events, "session")[0]["model"] == "other-7b"
    assert model.requests[0].body["model"] == "other-7b"


def test_json_output_with_stdin_lines_is_still_a_usage_error(run, project) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "i_core", "-C", str(project), "--output-format", "json"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=scaled(60),
    )
    assert result.returncode == 2 and b"needs a task" in result.stderr
