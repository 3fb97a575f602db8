"""The core with the real cache and memory workers: cache accounting and memory context."""

from __future__ import annotations

import json
import os
from pathlib import Path

import orjson
import pytest

from i_scripted import ScriptedModel


def test_cache_report_after_a_session(i, write_config, plugins, project, dirs):
    plugins("cache")
    (dirs["config"] / "cache.json").write_bytes(orjson.dumps({"mode": "openai", "namespace": "e2e"}))
    steps = [
        {
            "text": "one",
            "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 0}},
        },
        {
            "text": "two",
            "usage": {"prompt_tokens": 1200, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 1000}},
        },
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "c", "first").returncode == 0
        assert i("-C", str(project), "--session-name", "c", "second").returncode == 0
    key = model.requests[0].body["prompt_cache_key"]
    assert len(key) == 64 and model.requests[1].body["prompt_cache_key"] == key
    report = i("--runtime", "cache-report", "-C", str(project), "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["observed_token_hit_ratio"] == pytest.approx(1000 / 2200)
    assert data["target_met"] is False
    table = i("--runtime", "cache-report", "-C", str(project))
    assert table.returncode == 0 and "hit" in table.stdout.lower()


def test_unknown_usage_makes_target_met_null(i, write_config, plugins, project, dirs):
    plugins("cache")
    with ScriptedModel([{"text": "no usage", "usage": "omit"}]) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "hello").returncode == 0
    data = json.loads(i("--runtime", "cache-report", "-C", str(project), "--json").stdout)
    assert data["target_met"] is None


def test_memory_is_injected_as_an_untrusted_snapshot(i, write_config, plugins, project, dirs):
    plugins("memory")
    steps = [
        {"tool_calls": [{"name": "memory_set", "arguments": {"key": "build", "value": "make all"}}]},
        {"text": "stored"},
        {"text": "I remember"},
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        first = i("-C", str(project), "--yolo", "--session-name", "m", "remember the build command")
        assert first.returncode == 0, first.stderr
        again = i("-C", str(project), "--session-name", "m", "what do you remember?")
        assert again.returncode == 0, again.stderr
    third = model.requests[2].body["messages"]
    snapshots = [m for m in third if "<context" in str(m.get("content"))]
    assert len(snapshots) >= 1 and "make all" in snapshots[-1]["content"]
    assert "untrusted" in snapshots[-1]["content"]
    # The memory file lives in the workspace state folder, not in the project.
    paths = json.loads(i("--runtime", "paths", "-C", str(project)).stdout)
    with open(os.path.join(paths["state_dir"], "memory.json"), encoding="utf-8") as handle:
        assert json.load(handle)["entries"]["build"] == "make all"


def test_memory_refuses_secrets_through_the_core(i, write_config, plugins, project):
    plugins("memory")
    steps = [
        {
            "tool_calls": [
                {
                    "name": "memory_set",
                    "arguments": {"key": "token", "value": "ghp_abcdefghijklmnopqrstuvwxyz0123456789"},
                }
            ]
        },
        {"text": "ok"},
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "remember my token")
    assert result.returncode == 0, result.stderr
    reply = next(m for m in model.requests[1].body["messages"] if m["role"] == "tool")["content"]
    assert "error" in reply.lower() and "ghp_abcdefghijklmnopqrstuvwxyz0123456789" not in reply


def test_a_stream_that_errors_midway_leaves_no_request_pending_in_the_cache_report(
    i, write_config, plugins, project, dirs
):
    # A real OpenRouter stream (packages/core/tests/recordings, pydantic-ai's cassette, MIT) that
    # ends in an error chunk carrying usage: after_response must still see it, or the cache report
    # keeps the request "pending" forever and its target can never be met.
    recording = (
        Path(__file__).resolve().parents[2] / "packages/core/tests/recordings/openrouter-minimax-stream-error.sse"
    )
    plugins("cache")
    (dirs["config"] / "cache.json").write_bytes(orjson.dumps({"mode": "observe", "namespace": "e2e"}))
    step = {"raw_body": recording.read_bytes(), "stream": True}
    with ScriptedModel([step]) as model:
        write_config(model.base_url, stream=True)
        failed = i("-C", str(project), "--session-name", "e", "hello")
    assert failed.returncode == 4, failed.stderr
    report = i("--runtime", "cache-report", "-C", str(project), "--json")
    assert report.returncode == 0, report.stderr
    data = json.loads(report.stdout)
    assert data["totals"]["pending"] == 0 and data["totals"]["observed"] == 1, data["totals"]
    assert data["totals"]["input_tokens"] == 43, data["totals"]
