"""The run's summary (stderr line and --json): asked / run / refused tool calls, in call order."""

from __future__ import annotations

import subprocess
import sys

import orjson
import pytest

from i_protocol.testing import scaled
from i_scripted import ScriptedModel


@pytest.fixture
def configured(dirs):
    def write(base_url: str) -> None:
        config = {"protocol": "openai", "base_url": base_url, "model": "scripted-1", "max_tokens": 256}
        config.update(retries=0, timeout=scaled(30), stream=False, budget={"context_window": 100000})
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))

    return write


def i(project, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "i_core", "-C", str(project), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )


# write asks (refused: no one to ask without a TTY), read runs, then a call with broken arguments.
CALLS = [
    {"name": "write", "arguments": {"path": "a.txt", "content": "x"}},
    {"name": "read", "arguments": {"path": "README.md"}},
    {"name": "write", "arguments": {"path": "b.txt", "content": "y"}},
]


def test_refused_calls_are_not_counted_as_run_and_tools_are_named_in_call_order(configured, project) -> None:
    with ScriptedModel(
        [{"tool_calls": CALLS}, {"tool_calls": [{"name": "glob", "arguments": "{broken"}]}, {"text": "done"}]
    ) as model:
        configured(model.base_url)
        result = i(project, "--json", "go")
    assert result.returncode == 0, result.stderr
    summary = [line for line in result.stderr.splitlines() if line.startswith("[i] ") and "model request" in line]
    assert len(summary) == 1
    assert "[i] 3 model request(s), 4 tool call(s) asked, 1 run, 2 refused (write, read, glob)," in summary[0]
    report = orjson.loads(result.stdout)
    assert report["tool_calls"] == ["write", "read", "write", "glob"]
    assert report["tool_call_counts"] == {"asked": 4, "run": 1, "refused": 2}


def test_the_summary_starts_its_own_line_after_an_answer_without_a_newline(configured, project) -> None:
    with ScriptedModel([{"text": "no newline at the end"}]) as model:
        configured(model.base_url)
        result = subprocess.run(
            [sys.executable, "-m", "i_core", "-C", str(project), "hi"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one stream, as a terminal shows them
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 0, result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == "no newline at the end"
    assert lines[1].startswith("[i] 1 model request(s), 0 tool call(s) asked, 0 run, 0 refused (none),")
