"""The long tail through the real `i` process: a turn goes on after a stream without a finish
reason, and the console says what the answer's text cannot (cut at the output limit, a refusal)
and keeps a turn's responses apart."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_protocol.testing import scaled
from i_scripted import ScriptedModel

RECORDINGS = Path(__file__).parent / "recordings"
CUT_NOTE = "[i] the answer was cut at the output limit"
REFUSAL_NOTE = "[i] the model refused the request"


@pytest.fixture
def env(dirs: dict[str, Path]) -> dict[str, str]:
    value = dict(os.environ)
    value.update({f"I_{key.upper()}_DIR": str(path) for key, path in dirs.items()})
    value["TEST_MODEL_KEY"] = "sk-test-secret-value-1234567890"
    return value


def run(env: dict[str, str], dirs: dict[str, Path], project: Path, base_url: str, *args: str, **config: object):
    settings = {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "api_key_env": "TEST_MODEL_KEY",
        "max_tokens": 512,
        "retries": 0,
        "timeout": scaled(20),
        "stream": False,
        **config,
    }
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(settings))
    command = [sys.executable, "-m", "i_core", "-C", str(project), "--yolo", *args]
    return subprocess.run(
        command, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=scaled(120)
    )


@pytest.mark.parametrize("chunk", [None, 3])
def test_a_tool_call_stream_without_finish_reason_goes_on_to_the_answer(env, dirs, project, chunk) -> None:
    raw = (RECORDINGS / "openrouter-novita-kimi-k2-tool-call-no-finish.sse").read_bytes()
    step = {"raw_body": raw, "stream": True, **({"chunk_bytes": chunk} if chunk else {})}
    with ScriptedModel([step, {"text": "llm is at version 0.26"}]) as model:
        result = run(env, dirs, project, model.base_url, "which llm version?", stream=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "llm is at version 0.26"
    tool_result = model.requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool" and tool_result["tool_call_id"] == "0"


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_cut_at_the_output_limit_is_said_on_stderr_and_in_json(env, dirs, project, stream) -> None:
    long_text = "word " * 60
    with ScriptedModel([{"text": long_text}, {"text": long_text}]) as model:
        plain = run(env, dirs, project, model.base_url, "write a lot", stream=stream, max_tokens=8)
        as_json = run(env, dirs, project, model.base_url, "write a lot", "--json", stream=stream, max_tokens=8)
    assert plain.returncode == 0, plain.stderr
    assert CUT_NOTE in plain.stderr and plain.stdout.strip()
    result = orjson.loads(as_json.stdout)
    assert result["truncated"] is True and result["refusal"] is False and result["exit"] == 0
    assert CUT_NOTE in as_json.stderr


def test_a_complete_answer_is_not_marked(env, dirs, project) -> None:
    with ScriptedModel([{"text": "short"}]) as model:
        result = run(env, dirs, project, model.base_url, "hi", "--json")
    assert orjson.loads(result.stdout)["truncated"] is False
    assert CUT_NOTE not in result.stderr and REFUSAL_NOTE not in result.stderr


@pytest.mark.parametrize("stream", [False, True])
def test_a_refusal_is_printed_as_the_answer_and_marked(env, dirs, project, stream) -> None:
    name = "openai-refusal.sse" if stream else "openai-refusal.json"
    raw = (RECORDINGS / name).read_bytes()
    with ScriptedModel([{"raw_body": raw, "stream": stream}, {"raw_body": raw, "stream": stream}]) as model:
        plain = run(env, dirs, project, model.base_url, "do it", stream=stream)
        as_json = run(env, dirs, project, model.base_url, "do it", "--json", stream=stream)
    assert plain.returncode == 0, plain.stderr
    assert plain.stdout.strip() == "I'm sorry, I cannot assist with that request."
    assert REFUSAL_NOTE in plain.stderr
    result = orjson.loads(as_json.stdout)
    assert result["refusal"] is True and result["answer"] == "I'm sorry, I cannot assist with that request."


def test_a_turns_streamed_responses_do_not_run_together(env, dirs, project) -> None:
    (project / "a.txt").write_text("A")
    script = [
        {"text": "Let me look at the file.", "tool_calls": [{"name": "read", "arguments": {"path": "a.txt"}}]},
        {"text": "I found the letter A."},
    ]
    with ScriptedModel(script) as model:
        result = run(env, dirs, project, model.base_url, "what is in a.txt?", stream=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "Let me look at the file.\n\nI found the letter A.\n"
