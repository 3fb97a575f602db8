"""A provider worker through the real core: examples/ollama_provider speaks Ollama's /api/chat,
a wire the core does not, to a loopback double of it; the built-in adapter is never used."""

from __future__ import annotations

import json
import math
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.testing import scaled
from i_protocol.workspace import workspace_id_for, workspace_state_dir
from i_scripted import ScriptedModel

PROVIDER = Path(__file__).resolve().parents[2] / "examples" / "ollama_provider" / "provider.py"


class OllamaDouble:
    """Ollama's ``/api/chat`` on loopback, no kinder than the real one: usage at ~4 bytes a token,
    a context size enforced (HTTP 400 before generating), ``num_predict`` honoured, tool-call
    arguments as objects and no call ids. Every request is recorded with its path."""

    def __init__(self, steps: list[dict[str, Any]], *, num_ctx: int = 8192) -> None:
        self.steps, self.num_ctx = list(steps), num_ctx
        self.requests: list[tuple[str, dict[str, Any]]] = []
        double = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                double.requests.append((self.path, body))
                status, answer = double.answer(self.path, body)
                raw = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        if path != "/api/chat":
            return 404, {"error": f"404 page not found: {path}"}
        for message in body["messages"]:
            for call in message.get("tool_calls", []):
                assert isinstance(call["function"]["arguments"], dict), "Ollama takes arguments as an object"
        prompt = math.ceil(len(json.dumps([body["messages"], body.get("tools")]).encode()) / 4)
        if prompt > self.num_ctx:
            return 400, {"error": f"input length {prompt} exceeds the context length {self.num_ctx}"}
        step = self.steps.pop(0)
        if "status" in step:
            return step["status"], {"error": "server busy"}
        limit = (body.get("options") or {}).get("num_predict", 10_000)
        text = step.get("text", "")[: limit * 4]
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if "tool_calls" in step:
            message["tool_calls"] = [{"function": call} for call in step["tool_calls"]]
        done = "length" if len(step.get("text", "")) > limit * 4 else "stop"
        out = max(1, math.ceil(len(json.dumps(message).encode()) / 4))
        answer = {"model": body["model"], "message": message, "done": True, "done_reason": done}
        return 200, {**answer, "prompt_eval_count": prompt, "eval_count": min(out, limit)}

    def __enter__(self) -> OllamaDouble:
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def provider_config(dirs, base_url: str, **extra: Any) -> None:
    config = {
        "protocol": "ollama",
        "base_url": base_url,
        "model": "qwen3:8b",
        "max_tokens": 256,
        "timeout": scaled(30),
        "budget": {"context_window": 8192},
        "provider": {"exec": [sys.executable, str(PROVIDER)]},
        **extra,
    }
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))


def test_the_example_provider_runs_a_task_with_a_tool_call(i, dirs, project, plugins):
    plugins("budget")
    (project / "notes.txt").write_text("the answer is 42\n")
    steps = [{"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}, {"text": "It says 42."}]
    with OllamaDouble(steps) as ollama:
        provider_config(dirs, ollama.url)
        result = i("-C", str(project), "--json", "what does notes.txt say?")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["answer"] == "It says 42." and report["tool_calls"] == ["read"]
    assert [path for path, _ in ollama.requests] == ["/api/chat", "/api/chat"]  # never /chat/completions
    second = ollama.requests[1][1]["messages"]
    tool = next(m for m in second if m["role"] == "tool")
    assert tool["tool_name"] == "read" and "the answer is 42" in tool["content"]
    assert report["usage"]["input_tokens"] > 0 and report["budget"] is not None  # usage reached the budget


def test_retries_inside_the_provider_are_announced_as_request_retry(i, dirs, project, plugins):
    plugins("cache")
    with OllamaDouble([{"status": 503}, {"text": "fine now"}]) as ollama:
        provider_config(dirs, ollama.url)
        result = i("-C", str(project), "--json", "hi")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] == "fine now" and len(ollama.requests) == 2
    state = workspace_state_dir(workspace_id_for(str(project.resolve()), str(dirs["data"])), str(dirs["data"]))
    totals = orjson.loads((state / "metrics" / "cache-stats.json").read_bytes())["totals"]
    assert totals["retries"] == 1 and totals["prepared"] == 1 and totals["observed"] == 1


def test_a_provider_bound_session_never_uses_the_built_in_adapter(i, dirs, project):
    """protocol "openai" with base_url at the scripted model: a failing provider is an error, and the
    scripted model's log shows that not one request went out through the core's own adapter."""
    failing = project.parent / "failing_provider.py"
    failing.write_text(
        "import sys\nfrom i_protocol import Worker, WorkerError\nworker = Worker('p', '1')\n"
        "@worker.hook('provider_request')\ndef request(data, req):\n    raise WorkerError('upstream is down')\n"
        "sys.exit(worker.main())\n"
    )
    with ScriptedModel([{"text": "must not be asked"}]) as model:
        config = {"protocol": "openai", "base_url": model.base_url, "model": "scripted-1", "timeout": scaled(30)}
        config["provider"] = {"exec": [sys.executable, str(failing)]}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        result = i("-C", str(project), "hello")
    assert result.returncode == 6, result.stderr
    assert "the model provider failed" in result.stderr and "upstream is down" in result.stderr
    assert "no built-in adapter" in result.stderr
    assert model.requests == []


def test_the_provider_gets_only_the_credential_named_for_it(i, dirs, project, env):
    spy = project.parent / "env_provider.py"
    spy.write_text(
        "import os, sys\nfrom i_protocol import Worker\nworker = Worker('p', '1')\n"
        "@worker.hook('provider_request')\ndef request(data, req):\n"
        "    seen = ','.join(n for n in ('PROVIDER_KEY', 'OPENAI_API_KEY', 'OTHER_SECRET') if n in os.environ)\n"
        "    return {'message': {'role': 'assistant', 'content': seen}, 'finish_reason': 'stop', 'usage': None}\n"
        "sys.exit(worker.main())\n"
    )
    env.update(PROVIDER_KEY="k-1", OPENAI_API_KEY="sk-x", OTHER_SECRET="s")
    provider_config(dirs, "http://127.0.0.1:9", provider={"exec": [sys.executable, str(spy)]})
    first = i("-C", str(project), "--json", "hi")
    provider_config(
        dirs, "http://127.0.0.1:9", provider={"exec": [sys.executable, str(spy)], "api_key_env": "PROVIDER_KEY"}
    )
    second = i("-C", str(project), "--json", "hi")
    assert json.loads(first.stdout)["answer"] == "", first.stderr
    assert json.loads(second.stdout)["answer"] == "PROVIDER_KEY", second.stderr


@pytest.mark.parametrize("protocol", ["ollama", "my-wire/v2"])
def test_a_custom_protocol_without_a_provider_is_an_error(i, dirs, project, protocol):
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps({"protocol": protocol, "base_url": "http://127.0.0.1:9", "model": "m"})
    )
    result = i("-C", str(project), "hi")
    assert result.returncode == 3
    assert f"protocol {protocol!r} is not built in" in result.stderr and "provider worker" in result.stderr


def test_a_bound_provider_starts_with_the_first_hooks_workers_not_at_the_first_request(i, dirs, project):
    """The first request goes to the provider: it boots beside the session's first workers. A
    before_request hook sees its start marker before any provider_request is sent."""
    marker = project.parent / "provider.started"
    provider = project.parent / "marked_provider.py"
    provider.write_text(
        f"import sys\nopen({str(marker)!r}, 'w').close()\nfrom i_protocol import Worker\nworker = Worker('p', '1')\n"
        "@worker.hook('provider_request')\ndef request(data, req):\n"
        "    return {'message': {'role': 'assistant', 'content': 'ok'}, 'finish_reason': 'stop', 'usage': None}\n"
        "sys.exit(worker.main())\n"
    )
    looker = project.parent / "looker.py"
    looker.write_text(
        "import os, sys, time\nfrom i_protocol import Worker, WorkerError\nworker = Worker('looker', '1')\n"
        "@worker.hook('before_request')\ndef look(data, req):\n"
        "    stop = time.monotonic() + 10\n"
        f"    while not os.path.exists({str(marker)!r}) and time.monotonic() < stop:\n"
        "        time.sleep(0.01)\n"
        f"    if not os.path.exists({str(marker)!r}):\n"
        "        raise WorkerError('the provider has not started before the first request')\n"
        "    return data\n"
        "sys.exit(worker.main())\n"
    )
    manifest = project.parent / "looker.json"
    manifest.write_bytes(
        orjson.dumps({"hooks": [{"events": ["before_request"], "exec": [sys.executable, str(looker)]}]})
    )
    provider_config(dirs, "http://127.0.0.1:9", provider={"exec": [sys.executable, str(provider)]})
    result = i("-C", str(project), "--manifest", str(manifest), "--json", "hi")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["answer"] == "ok"
