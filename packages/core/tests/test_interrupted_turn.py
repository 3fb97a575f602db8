"""Ctrl-C after a checkpointed tool batch: the next user message opens with a marked note."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import orjson
import pytest

from i_protocol.testing import scaled, wait_until
from i_scripted import ScriptedModel

READ = {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}
NOTE = "[the user interrupted the previous turn after 1 tool call (read);"


@pytest.fixture
def configured(dirs):
    def write(base_url: str) -> None:
        config = {"protocol": "openai", "base_url": base_url, "model": "scripted-1", "max_tokens": 256}
        config.update(retries=0, timeout=scaled(120), stream=False, budget={"context_window": 100000})
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))

    return write


def argv(project, *args: str) -> list[str]:
    return [sys.executable, "-m", "i_core", "-C", str(project), "--session-name", "s", *args]


def interrupt_at_request(project, model: ScriptedModel, count: int) -> int:
    """Start `i`, send SIGINT (Ctrl-C) once the model has its ``count``-th request; the exit code."""
    process = subprocess.Popen(
        argv(project, "look at the readme"),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        # As at a terminal: a test run started in the background (`cmd &`) inherits SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert wait_until(lambda: len(model.requests) >= count, 30)
        os.kill(process.pid, signal.SIGINT)
        return process.wait(timeout=scaled(30))
    finally:
        process.kill()


def next_turn(project) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        argv(project, "go on, but briefly"), stdin=subprocess.DEVNULL, capture_output=True, timeout=scaled(60)
    )


def test_the_next_message_says_the_user_interrupted_the_turn_after_its_tools(configured, project) -> None:
    with ScriptedModel([READ, {"delay": 60, "text": "never"}, {"text": "brief"}]) as model:
        configured(model.base_url)
        assert interrupt_at_request(project, model, 2) == 130
        done = next_turn(project)
    assert done.returncode == 0, done.stderr
    note, words = model.requests[2].body["messages"][-1]["content"]
    assert note["text"].startswith(NOTE) and set(note) == {"type", "text"}  # the marker never goes on the wire
    assert words == {"type": "text", "text": "go on, but briefly"}
    saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())
    assert saved["messages"][-2]["content"][0]["_interrupted"] is True
    assert "interrupted" not in saved["meta"]  # said once


def test_no_note_when_the_cancelled_turn_left_nothing_in_the_checkpoint(configured, project) -> None:
    with ScriptedModel([{"text": "first"}, {"delay": 60, "text": "never"}, {"text": "brief"}]) as model:
        configured(model.base_url)
        assert subprocess.run(argv(project, "hello"), stdin=subprocess.DEVNULL, timeout=scaled(60)).returncode == 0
        assert interrupt_at_request(project, model, 2) == 130
        done = next_turn(project)
    assert done.returncode == 0, done.stderr
    assert model.requests[2].body["messages"][-1]["content"] == "go on, but briefly"


def test_no_note_when_the_turn_failed_rather_than_being_cancelled(configured, project) -> None:
    with ScriptedModel([READ, {"status": 400, "error_message": "no"}, {"text": "brief"}]) as model:
        configured(model.base_url)
        failed = subprocess.run(
            argv(project, "look at the readme"), stdin=subprocess.DEVNULL, capture_output=True, timeout=scaled(60)
        )
        assert failed.returncode == 4
        done = next_turn(project)
    assert done.returncode == 0, done.stderr
    assert model.requests[2].body["messages"][-1]["content"] == "go on, but briefly"
