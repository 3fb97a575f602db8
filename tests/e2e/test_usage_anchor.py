"""One usage number, or a tool set that came and went, never bricks a session (real `i`, the real
budget worker, the scripted model on loopback)."""

from __future__ import annotations

import sys

import orjson

from i_scripted import ScriptedModel

POISON = {"prompt_tokens": 2_000_000, "completion_tokens": 5, "total_tokens": 2_000_005}


def _session(project) -> dict:
    return orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())


def test_an_impossible_usage_count_is_not_stored_and_the_next_turn_answers(i, write_config, plugins, project):
    plugins("budget")
    with ScriptedModel([{"text": "one", "usage": POISON}, {"text": "two"}, {"text": "three"}]) as model:
        write_config(model.base_url)
        first = i("-C", str(project), "--session-name", "s", "hello")
        assert first.returncode == 0, first.stderr
        assert first.stderr.count("2000000 input tokens") == 1 and "impossible" in first.stderr
        assert "usage_anchor" not in _session(project)["meta"]
        second = i("-C", str(project), "--session-name", "s", "again")
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "two"
        assert _session(project)["meta"]["usage_anchor"]["input_tokens"] < 100_000  # a real count again


def test_a_poisoned_anchor_already_on_disk_is_repaired_at_load(i, write_config, plugins, project):
    """What an older core stored after that reply: every later turn was exit 5 until a hand edit."""
    plugins("budget")
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "s", "hello").returncode == 0
        path = project / ".i" / "sessions" / "s.json"
        doc = orjson.loads(path.read_bytes())
        doc["meta"]["usage_anchor"]["input_tokens"] = 2_000_000
        for key in ("tools_digest", "system_digest"):  # as an older core wrote it
            doc["meta"]["usage_anchor"].pop(key, None)
        path.write_bytes(orjson.dumps(doc))
        result = i("-C", str(project), "--session-name", "s", "again")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "two"
    assert "dropped" in result.stderr
    assert _session(project)["meta"]["usage_anchor"]["input_tokens"] < 100_000


def _builtin(dirs, tools: list[dict]) -> None:
    (dirs["config"] / "builtin.json").write_bytes(orjson.dumps({"builtin_profile": "configured", "tools": tools}))


def test_a_session_is_not_stuck_after_a_huge_tool_set_is_removed(i, write_config, plugins, project, dirs):
    """A server offering thousands of tools makes a legitimately huge anchor; once its tools are gone
    (here with a model whose window is smaller than that anchor) the next turn answers."""
    plugins("budget")
    never_started = [sys.executable, "-c", "raise SystemExit(1)"]  # only called tools start their worker
    many = [
        {
            "name": f"tool_{n}",
            "description": "looks something up " * 8,
            "parameters": {"type": "object"},
            "exec": never_started,
        }
        for n in range(3_000)
    ]
    _builtin(dirs, many)
    with ScriptedModel([{"text": "one"}, {"text": "two"}], context_window=2_000_000) as model:
        write_config(model.base_url, budget={"context_window": 2_000_000})
        first = i("-C", str(project), "--session-name", "s", "hello")
        assert first.returncode == 0, first.stderr
        anchored = _session(project)["meta"]["usage_anchor"]["input_tokens"]
        assert anchored > 100_000  # the tool schemas' real tokens
        _builtin(dirs, [])
        write_config(model.base_url, budget={"context_window": 100_000})
        second = i("-C", str(project), "--session-name", "s", "again")
    assert second.returncode == 0, second.stderr
    assert second.stdout.strip() == "two"
    assert _session(project)["meta"]["usage_anchor"]["input_tokens"] < 100_000
