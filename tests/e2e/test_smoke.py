"""The smoke profiles through the real core and the scripted model: no tool schema sent, the output
capped, a tool-call reply refused without running it, cache statistics only in smoke-cache.json."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from i_protocol.workspace import workspace_id_for, workspace_state_dir
from i_scripted import ScriptedModel

LONG = "The endpoint works and answers in full sentences of plain English text. " * 40
EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "smoke"


def state_dir(dirs, project: Path) -> Path:
    return workspace_state_dir(workspace_id_for(str(project.resolve()), str(dirs["data"])), str(dirs["data"]))


@pytest.mark.parametrize(("profile", "cap"), [("smoke", 32), ("smoke-thinking", 1024)])
def test_smoke_sends_no_tools_and_caps_the_output(i, write_config, plugins, project, dirs, profile, cap):
    plugins(profile)
    # cache.json asks for openai cache fields; the smoke profiles only observe, whatever it says.
    (dirs["config"] / "cache.json").write_text('{"mode": "openai", "stats": "metrics/cache-stats.json"}')
    with ScriptedModel([{"text": LONG}], context_window=100_000) as model:
        write_config(model.base_url, max_tokens=4096)
        result = i("-C", str(project), "--json", "are you there?")
    assert result.returncode == 0, result.stderr
    [request] = model.requests
    body = request.body
    assert "tools" not in body and "tool_choice" not in body
    assert body["max_completion_tokens"] == cap
    assert "prompt_cache_key" not in body  # observe mode: no provider cache field
    report = json.loads(result.stdout)
    assert report["truncated"] is (cap == 32)  # the scripted model stops at the cap, as servers do
    assert report["usage"]["output_tokens"] <= cap
    metrics = state_dir(dirs, project) / "metrics"
    assert sorted(p.name for p in metrics.iterdir() if p.suffix == ".json") == ["smoke-cache.json"]
    stats = orjson.loads((metrics / "smoke-cache.json").read_bytes())
    assert stats["totals"]["prepared"] == 1 and stats["totals"]["observed"] == 1


def test_smoke_refuses_a_tool_call_without_running_it(i, write_config, plugins, project, dirs):
    plugins("smoke")
    steps = [{"tool_calls": [{"name": "write", "arguments": {"path": "made.txt", "content": "x"}}]}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "write a file")
    assert result.returncode == 6
    assert "smoke: the model answered with a tool call (write)" in result.stderr and "not run" in result.stderr
    assert not (project / "made.txt").exists()
    assert len(model.requests) == 1  # refused, not sent back to the model with a tool result
    # The cache observes ahead of the refusal: the billed reply is still counted.
    stats = orjson.loads((state_dir(dirs, project) / "metrics" / "smoke-cache.json").read_bytes())
    assert stats["totals"]["observed"] == 1


@pytest.mark.parametrize(("name", "cap"), [("deepseek.smoke.json", 32), ("deepseek.thinking-vision.json", 1024)])
def test_the_example_smoke_configs_name_their_key_only_by_reference(name, cap):
    from i_core.settings import parse_api_config

    path = EXAMPLES / name
    parsed = parse_api_config(orjson.loads(path.read_bytes()), str(path))  # a literal key would be refused
    assert parsed.api_key_env == "DEEPSEEK_TEST_API_KEY" and parsed.protocol == "deepseek"
    assert parsed.max_tokens == cap
