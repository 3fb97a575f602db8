"""The OpenAI Responses API end to end: the same task over every protocol, no hidden server state,
the hook order of the cache around the `responses` module, and a manifest for every profile."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import orjson
import pytest

from i_core.bundled.responses import responses_request
from i_core.manifest import parse_manifest
from i_core.modules import PROFILES
from i_core.providers import require_protocol_modules
from i_core.selection import generate_manifest
from i_scripted import ScriptedModel, prompt_tokens

FILLER = "The build log said: " + "step ok; " * 150  # ~1.4 KB per user message
SUMMARY = "<continuation_summary>\n## Latest user request\nkeep counting turns\n## Next step\nanswer the next turn\n</continuation_summary>"
CACHE_MODE = {"openai": "openai", "deepseek": "observe", "anthropic": "anthropic", "responses": "openai"}


def responder(summaries: list[dict]):
    """Reads README.md when asked, answers every other turn briefly, and summarises when asked."""

    def step(request: dict) -> dict:
        if not request.get("tools"):
            summaries.append(request)
            return {"text": SUMMARY}
        text = json.dumps(request)
        if "read the readme" in text and "demo project" not in text:
            return {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}], "reasoning": "look first"}
        if "read the readme" in text and "README says" not in text:
            return {"text": "README says: {{last_tool_result}}"}
        return {"text": "noted"}

    return step


def setup(dirs, plugins, protocol: str) -> None:
    plugins("full", ["memory", "web", "skills"])
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "model"}))
    (dirs["config"] / "cache.json").write_bytes(orjson.dumps({"mode": CACHE_MODE[protocol], "namespace": "e2e"}))


def saved(project: Path) -> list[dict]:
    return orjson.loads((project / ".i" / "sessions" / "task.json").read_bytes())["messages"]


@pytest.mark.parametrize("protocol", ["openai", "deepseek", "anthropic", "responses"])
@pytest.mark.parametrize("stream", [False, True])
def test_the_same_task_passes_over_every_protocol(i, write_config, plugins, project, dirs, protocol, stream):
    """Tool calls, a compaction, a resume and the cache report, with the real workers of `full`."""
    setup(dirs, plugins, protocol)
    summaries: list[dict] = []
    with ScriptedModel([responder(summaries)] * 80, context_window=6000) as model:
        write_config(model.base_url_for(protocol), protocol=protocol, stream=stream, budget={"context_window": 6000})
        first = i("-C", str(project), "--session-name", "task", "--yolo", "read the readme")
        assert first.returncode == 0, first.stderr
        results = [i("-C", str(project), "--session-name", "task", f"turn {n}: {FILLER}") for n in range(8)]
        # A resume: a new process continues the saved (compacted) session.
        last = i("-C", str(project), "--session-name", "task", "what did the readme say?")
    assert all(r.returncode == 0 for r in [*results, last]), [r.stderr for r in results if r.returncode]
    assert "README says:" in first.stdout and "demo project" in first.stdout
    messages = saved(project)
    assert any(isinstance(m.get("_compaction"), dict) for m in messages), "the session was never compacted"
    assert summaries, "no summary request was made"
    assert messages[-2]["content"] == "what did the readme say?" and messages[-1]["content"] == "noted"
    # The resumed request carried the compacted history: the summary, then the suffix.
    resumed = json.dumps(model.requests[-1].body)
    assert "<continuation_summary>" in resumed and "turn 7:" in resumed
    report = i("--runtime", "cache-report", "-C", str(project), "--json")
    assert report.returncode == 0, report.stderr
    totals = json.loads(report.stdout)["totals"]
    assert totals["pending"] == 0 and totals["unknown_usage"] == 0
    assert totals["known_usage"] == model.served  # every answer observed with its usage, refusals aside
    assert totals["input_tokens"] > 0 and totals["cache_read_tokens"] == 0


def test_no_request_keeps_state_on_the_server_and_each_carries_the_full_input(i, write_config, plugins, project, dirs):
    setup(dirs, plugins, "responses")
    summaries: list[dict] = []
    with ScriptedModel([responder(summaries)] * 60, context_window=6000) as model:
        write_config(model.base_url, protocol="responses", budget={"context_window": 6000})
        for n in range(8):
            assert i("-C", str(project), "--session-name", "task", f"turn {n}: {FILLER}").returncode == 0
    messages = saved(project)
    cut = next(n for n, m in enumerate(messages) if isinstance(m.get("_compaction"), dict))
    bodies = [r.body for r in model.requests if r.path == "/v1/responses"]
    assert summaries and len(bodies) == len(model.requests)
    for body in bodies:
        assert body["store"] is False and "previous_response_id" not in body and "conversation" not in body
    after = [b for b in bodies[bodies.index(summaries[-1]) + 1 :] if b.get("tools")]
    assert after, "no request followed the compaction"
    for body in after:
        assert "<continuation_summary>" in json.dumps(body["input"][0])  # from the summary on, not a delta
    # The last request is the whole saved history (but its answer), transformed: the full input.
    expected = responses_request({"messages": messages[:-1]})
    assert bodies[-1]["input"] == expected["input"] and bodies[-1]["instructions"] == expected["instructions"]
    assert cut == 1


def test_cache_observes_before_responses_rejects_and_prepares_after_it_transforms(
    i, write_config, plugins, project, dirs
):
    setup(dirs, plugins, "responses")
    with ScriptedModel([{"text": "cut " * 40, "finish_reason": "length"}]) as model:
        write_config(model.base_url, protocol="responses")
        result = i("-C", str(project), "hello")
    # responses rejected the incomplete answer: the turn failed as a model error, nothing of it shown.
    assert result.returncode == 4 and "incomplete (max_output_tokens)" in result.stderr and "cut" not in result.stdout
    body = model.requests[0].body
    # cache prepared the Responses request (after the transform): its field beside input/instructions.
    assert len(body["prompt_cache_key"]) == 64 and "input" in body and "messages" not in body
    stats = next(dirs["data"].glob("workspaces/*/metrics/cache-stats.json"))
    record = orjson.loads(stats.read_bytes())["records"][-1]
    assert record["messages"] == len(body["input"]) == 1  # it fingerprinted input, not the history
    # ... and observed the provider's own usage before responses rejected the answer.
    assert record["status"] == "observed" and record["usage_status"] == "known"
    assert record["usage"]["input_tokens"] == prompt_tokens("responses", body)
    report = json.loads(i("--runtime", "cache-report", "-C", str(project), "--json").stdout)
    assert report["totals"]["known_usage"] == 1 and report["totals"]["pending"] == 0


def test_responses_without_its_module_is_refused_at_start(i, write_config, plugins, project, dirs, tmp_path):
    plugins("standard", ["memory", "web", "skills"])
    # The budget worker is one the first request needs: bound to a program that leaves a mark at start.
    marker = tmp_path / "budget-started"
    script = tmp_path / "budget.py"
    script.write_text(f"import pathlib, sys\npathlib.Path({str(marker)!r}).touch()\nsys.stdin.read()\n")
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"budget": {"exec": [sys.executable, str(script)]}}))
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(model.base_url, protocol="responses")
        result = i("-C", str(project), "hello")
    assert result.returncode == 3
    assert "'responses' module" in result.stderr and "responses-compact" in result.stderr
    assert model.requests == []
    assert not marker.exists()  # refused before any worker started


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_every_profile_has_a_valid_manifest(i, dirs, profile):
    result = i("--runtime", "manifest", profile)
    assert result.returncode == 0, result.stderr
    raw = orjson.loads(result.stdout)
    manifest = parse_manifest(raw, dirs["config"], profile)
    modules = {entry.module for entry in (*manifest.hooks, *manifest.tools)}
    expected = set(PROFILES[profile]) - {"mcp"}  # mcp only with an mcp.json
    assert modules == expected
    assert all(Path(entry.exec.argv[0]).is_absolute() for entry in (*manifest.hooks, *manifest.tools))


def test_in_full_the_cache_observes_before_responses_and_prepares_after_it(dirs) -> None:
    hooks = generate_manifest("full", dirs["config"])["hooks"]
    order = {
        event: [h["module"] for h in hooks if event in h["events"]] for event in ("before_request", "after_response")
    }
    assert order["before_request"] == ["responses", "cache"]  # cache prepares the Responses request
    assert order["after_response"] == ["cache", "responses"]  # cache observes before responses rejects
    manifest = parse_manifest(generate_manifest("full", dirs["config"]), dirs["config"], "full")
    require_protocol_modules("responses", manifest)
    cache = [hook.exec for hook in manifest.hooks if hook.module == "cache"]
    assert len(cache) == 2 and cache[0] == cache[1]  # two entries, one worker process


def test_call_ids_a_service_reuses_are_kept_apart_and_phase_is_resent(i, write_config, plugins, project, dirs):
    """The scripted service numbers each response's calls from call_0, as real ones do, and refuses
    two function_calls of one call_id; its messages carry a phase the next request must resend."""
    setup(dirs, plugins, "responses")
    read = {"name": "read", "arguments": {"path": "README.md"}}
    steps = [{"text": "Looking.", "tool_calls": [read]}, {"text": "first"}, {"tool_calls": [read]}, {"text": "second"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url, protocol="responses")
        first = i("-C", str(project), "--session-name", "task", "read it")
        second = i("-C", str(project), "--session-name", "task", "read it again")
    assert first.returncode == 0 and second.returncode == 0, second.stderr
    assert second.stdout.strip().endswith("second")
    messages = saved(project)
    calls = [call for message in messages for call in message.get("tool_calls") or []]
    assert [call["id"] for call in calls] == ["call_0", "call_0_2"]
    assert calls[1]["_original_id"] == "call_0" and "_original_id" not in calls[0]
    assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["call_0", "call_0_2"]
    sent = model.requests[-1].body["input"]
    assert [item["call_id"] for item in sent if item["type"] == "function_call"] == ["call_0", "call_0_2"]
    assert [item["call_id"] for item in sent if item["type"] == "function_call_output"] == ["call_0", "call_0_2"]
    phased = [item for item in sent if item["type"] == "message" and item["role"] == "assistant"]
    assert [item.get("phase") for item in phased] == ["commentary", "final_answer"]
