"""The server's exact count of a request (``budget.exact_count: "tokenize"``): asked of the same
origin (llama.cpp ``/apply-template`` + ``/tokenize``, vLLM ``/tokenize``), sent only to a budget
worker that declared ``exact_count``, never computed locally."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core.errors import ConfigError
from i_core.exact_count import ExactCounter, tools_fingerprint
from i_core.settings import parse_api_config
from i_protocol.testing import scaled
from i_scripted import ScriptedModel, prompt_tokens

HERE = Path(__file__).parent
HISTORY = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "Count me, please."}]
TOOLS = [{"name": "read", "description": "Read a file.", "parameters": {"type": "object"}}]


def config(base_url: str, mode: str = "tokenize", protocol: str = "openai"):
    return parse_api_config(
        {
            "protocol": protocol,
            "base_url": base_url,
            "model": "m",
            "budget": {"context_window": 4096, "exact_count": mode},
        }
    )


@pytest.mark.parametrize("style", ["llamacpp", "vllm"])
def test_the_server_counts_exactly_what_the_chat_request_sends(style):
    said: list[str] = []
    with ScriptedModel([{"text": "ok"}], context_window=4096, context_style=style) as model:
        counter = ExactCounter(config(model.base_url), said.append)
        count = counter.count(HISTORY, TOOLS)
        paths = [probe.path for probe in model.probes]
        import httpx

        body = {"model": "m", "messages": HISTORY, "tools": [{"type": "function", "function": TOOLS[0]}]}
        usage = httpx.post(model.base_url + "/chat/completions", json=body).json()["usage"]
        counter.close()
    assert count == usage["prompt_tokens"] == prompt_tokens("openai", body)
    assert said == [] and counter.style == style
    assert paths == ["/apply-template", "/tokenize"]  # vLLM: apply-template is 404, then tokenize


def test_a_server_that_cannot_count_is_said_once_and_not_asked_again():
    said: list[str] = []
    with ScriptedModel([], context_window=4096, context_style="openai") as model:
        counter = ExactCounter(config(model.base_url), said.append)
        assert counter.count(HISTORY, TOOLS) is None
        asked = len(model.probes)
        assert counter.count(HISTORY, TOOLS) is None
        assert len(model.probes) == asked  # not asked again
    (line,) = said
    assert "cannot count" in line and "/tokenize" in line


def test_off_by_default_and_only_two_modes():
    counter = ExactCounter(config("http://127.0.0.1:9/v1", "off"), lambda _m: None)
    assert counter.count(HISTORY, TOOLS) is None and counter.asked == 0
    with pytest.raises(ConfigError, match=r"budget\.exact_count must be one of off, tokenize"):
        config("http://127.0.0.1:9/v1", "tiktoken")


def test_anthropic_is_not_asked():
    said: list[str] = []
    counter = ExactCounter(config("http://127.0.0.1:9", protocol="anthropic"), said.append)
    assert counter.count(HISTORY, TOOLS) is None and "protocol is 'anthropic'" in said[0]


@pytest.mark.parametrize("declared", [True, False])
def test_the_count_reaches_only_a_budget_that_declared_exact_count(dirs, project, tmp_path, write_manifest, declared):
    log = tmp_path / "log.ndjson"
    behaviour = tmp_path / "behaviour.json"
    extensions = ["cut_estimates", "tool_output_budget", *(["exact_count"] if declared else [])]
    behaviour.write_text(json.dumps({"log": str(log), "log_budget": True, "extensions": extensions}))
    worker = [sys.executable, str(HERE / "workers" / "fake_compactor.py"), str(behaviour)]
    manifest = write_manifest({"hooks": [{"events": ["context_budget"], "exec": worker}]})
    with ScriptedModel([{"text": "ok"}], context_window=4096, context_style="llamacpp") as model:
        (dirs["config"] / "config.json").write_bytes(
            orjson.dumps(
                {
                    "protocol": "openai",
                    "base_url": model.base_url,
                    "model": "m",
                    "stream": False,
                    "budget": {"context_window": 4096, "exact_count": "tokenize"},
                }
            )
        )
        result = subprocess.run(
            [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest), "hello"],
            env=dict(os.environ),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
        sent = model.requests[0].body
    assert result.returncode == 0, result.stderr
    (check,) = [json.loads(line) for line in log.read_text().splitlines() if '"context_budget"' in line]
    assert "exact_count" not in check["budget"]  # the core's own setting is not the budget worker's
    if declared:
        exact = check["exact_count"]
        assert exact["tokens"] == prompt_tokens("openai", sent)
        assert exact["origin"] == model.root_url and exact["model"] == "m"
        assert exact["tools_fingerprint"] == tools_fingerprint(check["tools"])
    else:
        assert "exact_count" not in check and not [p for p in model.probes if p.method == "POST"]
