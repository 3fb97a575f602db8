"""``before_turn``: the full current memory as ``context.memory`` for the core's snapshot/delta logic."""

from __future__ import annotations

import orjson
from memory_harness import Env, frame, tool

from i_memory.snapshot import revision
from i_protocol.host import WorkerProcess

MESSAGES = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hi"}]


def turn(worker: WorkerProcess, env: Env, data: dict | None = None) -> dict:
    return worker.call("before_turn", data or {"messages": MESSAGES, "turn": 3}, context=env.context())


def test_reports_the_full_current_memory_and_keeps_everything_else(env: Env, worker: WorkerProcess) -> None:
    tool(worker, env, "memory_set", key="b", value="second")
    tool(worker, env, "memory_set", key="a", value="first \U0001f600")
    data = {"messages": MESSAGES, "turn": 3, "_private": {"x": 1}, "context": {"skills": {"kind": "skills"}}}
    out = turn(worker, env, data)
    assert out["messages"] == MESSAGES and out["turn"] == 3 and out["_private"] == {"x": 1}
    assert out["context"]["skills"] == {"kind": "skills"}
    memory = out["context"]["memory"]
    assert memory["kind"] == "memory"
    assert memory["entries"] == {"a": "first \U0001f600", "b": "second"}
    assert list(memory["entries"]) == ["a", "b"]  # sorted, so equal memory gives equal JSON
    assert memory["revision"] == revision({"a": "first \U0001f600", "b": "second"})


def test_revision_changes_with_content_only(env: Env, worker: WorkerProcess) -> None:
    empty = turn(worker, env)["context"]["memory"]
    assert empty["entries"] == {}
    tool(worker, env, "memory_set", key="k", value="v1")
    first = turn(worker, env)["context"]["memory"]["revision"]
    assert first != empty["revision"]
    assert turn(worker, env)["context"]["memory"]["revision"] == first  # unchanged memory, same revision
    tool(worker, env, "memory_set", key="k", value="v2")
    second = turn(worker, env)["context"]["memory"]["revision"]
    assert second != first
    tool(worker, env, "memory_set", key="k", value="v1")
    assert turn(worker, env)["context"]["memory"]["revision"] == first  # a digest of content, not a counter
    tool(worker, env, "memory_delete", key="k")
    assert turn(worker, env)["context"]["memory"] == empty


def test_revision_ignores_key_order() -> None:
    assert revision({"a": "1", "b": "2"}) == revision({"b": "2", "a": "1"})
    assert revision({"a": "1"}) != revision({"a": "2"})
    assert revision({"a": "1"}).startswith("sha256:")


def test_inject_false_returns_data_unchanged_but_tools_work(env: Env) -> None:
    env.write_config({"inject": False})
    worker = env.spawn()
    tool(worker, env, "memory_set", key="k", value="v")
    data = {"messages": MESSAGES, "context": {"skills": {}}}
    assert turn(worker, env, data) == data


def test_disabled_module_injects_nothing(env: Env) -> None:
    env.write_config({"enabled": False})
    worker = env.spawn()
    assert turn(worker, env, {"messages": MESSAGES}) == {"messages": MESSAGES}


def test_context_that_is_not_an_object_is_an_error(env: Env, worker: WorkerProcess) -> None:
    response = frame(worker, env, "before_turn", {"messages": [], "context": ["x"]})
    assert "data.context must be an object" in response["error"]


def test_events_it_does_not_handle_come_back_unchanged(env: Env, worker: WorkerProcess) -> None:
    data = {"messages": MESSAGES, "context": {"memory": "not ours here"}}
    assert worker.call("after_tool", data, context=env.context()) == data


def test_injected_memory_is_json_the_core_can_forward(env: Env, worker: WorkerProcess) -> None:
    tool(worker, env, "memory_set", key="\u65e5\u672c", value="line one\nline two \u0000")
    memory = turn(worker, env)["context"]["memory"]
    assert orjson.loads(orjson.dumps(memory)) == memory
