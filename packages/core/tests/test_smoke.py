"""The bundled smoke worker: tools removed, the output capped per protocol, tool-call answers
refused (a real worker process: the cap comes from its command line)."""

from __future__ import annotations

import sys

import pytest

from i_core.bundled.smoke import tool_calls
from i_core.pool import worker_environment
from i_protocol import ErrorFrame, paths_from_env
from i_protocol.host import WorkerProcess

TOOLS = [{"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}]


@pytest.fixture
def smoke(dirs):
    started = []

    def start(*args: str) -> WorkerProcess:
        argv = [sys.executable, "-m", "i_core", "--runtime", "worker", "smoke", *args]
        worker = WorkerProcess.spawn(argv, env=worker_environment(paths_from_env()))
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.close()


def prepare(worker: WorkerProcess, body: dict, protocol: str = "openai") -> dict:
    data = {"url": "http://127.0.0.1:9/v1/chat/completions", "protocol": protocol, "model": "m", "body": body}
    return worker.call("before_request", data)["body"]


def test_tools_go_and_the_output_is_capped_at_32_by_default(smoke):
    worker = smoke()
    body = {"model": "m", "messages": [], "tools": TOOLS, "tool_choice": "auto", "parallel_tool_calls": True}
    sent = prepare(worker, {**body, "max_completion_tokens": 4096, "temperature": 0})
    assert sent == {"model": "m", "messages": [], "max_completion_tokens": 32, "temperature": 0}
    assert prepare(worker, {"model": "m", "max_tokens": 10})["max_tokens"] == 10  # already below the cap


@pytest.mark.parametrize(
    ("protocol", "field"),
    [
        ("openai", "max_completion_tokens"),
        ("responses", "max_output_tokens"),
        ("anthropic", "max_tokens"),
        ("deepseek", "max_tokens"),
        ("my-wire", "max_tokens"),
    ],
)
def test_a_body_without_a_limit_gets_its_protocols_field(smoke, protocol, field):
    assert prepare(smoke("--output-cap", "1024"), {"model": "m"}, protocol) == {"model": "m", field: 1024}


@pytest.mark.parametrize("cap", ["0", "1025", "x", ""])
def test_an_output_cap_outside_1_to_1024_is_a_usage_error(run_i, cap):
    result = run_i("--runtime", "worker", "smoke", "--output-cap", cap)
    assert result.returncode == 2 and b"--output-cap must be an integer from 1 to 1024" in result.stderr


@pytest.mark.parametrize(
    "response",
    [
        {"choices": [{"message": {"role": "assistant", "tool_calls": [{"function": {"name": "read"}}]}}]},
        {"choices": [{"message": {"role": "assistant", "function_call": {"name": "read"}}}]},
        {"content": [{"type": "text", "text": "x"}, {"type": "tool_use", "name": "read", "input": {}}]},
        {"output": [{"type": "function_call", "name": "read", "arguments": "{}"}]},
        {"message": {"role": "assistant", "tool_calls": [{"function": {"name": "read", "arguments": {}}}]}},
    ],
)
def test_a_tool_call_answer_fails_the_turn(smoke, response):
    assert tool_calls(response) == ["read"]
    with pytest.raises(ErrorFrame, match=r"smoke: the model answered with a tool call \(read\).*not run"):
        smoke().call("after_response", {"response": response, "protocol": "openai"})


def test_a_text_answer_passes(smoke):
    response = {"choices": [{"message": {"role": "assistant", "content": "pong", "tool_calls": []}}]}
    data = {"response": response, "protocol": "openai", "request_meta": {"request": 1}}
    assert smoke().call("after_response", data) == data
