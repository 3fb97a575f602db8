"""The four memory tools through the real ``i-memory`` process."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from memory_harness import WORKSPACE_ID, Env, frame, tool, tool_error

from i_protocol.host import WorkerProcess


def stored(env: Env) -> dict[str, str]:
    document = orjson.loads(env.memory_file.read_bytes())
    assert document["version"] == 1
    entries = document["entries"]
    assert isinstance(entries, dict)
    return entries


def test_set_get_list_delete_round_trip(env: Env, worker: WorkerProcess) -> None:
    assert tool(worker, env, "memory_set", key="build.command", value="make -j4").startswith('created "build.command"')
    assert tool(worker, env, "memory_set", key="style.tests", value="pytest, no mocks").startswith("created")
    assert tool(worker, env, "memory_get", key="build.command") == "make -j4"
    listed = orjson.loads(tool(worker, env, "memory_list"))
    assert [item["key"] for item in listed["entries"]] == ["build.command", "style.tests"]
    assert listed["entries"][0] == {"key": "build.command", "chars": 8, "preview": "make -j4"}
    assert listed["total_entries"] == 2
    only = orjson.loads(tool(worker, env, "memory_list", prefix="style."))
    assert [item["key"] for item in only["entries"]] == ["style.tests"]
    assert tool(worker, env, "memory_set", key="build.command", value="make -j8").startswith("updated")
    assert tool(worker, env, "memory_get", key="build.command") == "make -j8"
    assert tool(worker, env, "memory_delete", key="build.command").startswith('deleted "build.command"')
    assert stored(env) == {"style.tests": "pytest, no mocks"}


def test_state_file_lives_in_workspace_state_folder(env: Env, worker: WorkerProcess) -> None:
    tool(worker, env, "memory_set", key="k", value="v")
    assert env.memory_file == Path(env.paths["data_dir"]) / "workspaces" / WORKSPACE_ID / "memory.json"
    assert stored(env) == {"k": "v"}
    assert env.memory_file.stat().st_mode & 0o077 == 0  # private to the user


def test_list_previews_are_bounded(env: Env, worker: WorkerProcess) -> None:
    tool(worker, env, "memory_set", key="long", value="x" * 500)
    item = orjson.loads(tool(worker, env, "memory_list"))["entries"][0]
    assert item["chars"] == 500
    assert item["preview"] == "x" * 120 + "…"


def test_missing_keys_are_errors(env: Env, worker: WorkerProcess) -> None:
    assert 'no entry named "nope"' in tool_error(worker, env, "memory_get", key="nope")
    assert "nothing was deleted" in tool_error(worker, env, "memory_delete", key="nope")
    assert not env.memory_file.exists()


def test_unchanged_set_does_not_rewrite(env: Env, worker: WorkerProcess) -> None:
    tool(worker, env, "memory_set", key="k", value="v")
    before = os.stat(env.memory_file)
    assert tool(worker, env, "memory_set", key="k", value="v").startswith("unchanged")
    after = os.stat(env.memory_file)
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"value": "v"}, "'key' is required"),
        ({"key": "k"}, "'value' is required"),
        ({"key": 3, "value": "v"}, "'key' must be a string, got int"),
        ({"key": "", "value": "v"}, "'key' must not be empty"),
        ({"key": " padded", "value": "v"}, "whitespace"),
        ({"key": "two\nlines", "value": "v"}, "control character U+000A"),
        ({"key": "tab\there", "value": "v"}, "control character U+0009"),
        ({"key": "del\x7f", "value": "v"}, "control character U+007F"),
        ({"key": "k" * 129, "value": "v"}, "129 characters; the limit is 128"),
        ({"key": "k", "value": ""}, "'value' must not be empty"),
        ({"key": "k", "value": {"a": 1}}, "'value' must be a string, got dict"),
        ({"key": "k", "value": "v" * 8001}, "8001 characters; the limit is 8000"),
    ],
)
def test_bad_keys_and_values_are_refused(env: Env, worker: WorkerProcess, arguments: dict, expected: str) -> None:
    assert expected in tool_error(worker, env, "memory_set", **arguments)
    assert not env.memory_file.exists()


def test_key_at_the_limit_and_a_prefix_over_it(env: Env, worker: WorkerProcess) -> None:
    assert tool(worker, env, "memory_set", key="k" * 128, value="v").startswith("created")
    assert "longer than the 128-character key limit" in tool_error(worker, env, "memory_list", prefix="p" * 129)
    assert "'prefix' must be a string" in tool_error(worker, env, "memory_list", prefix=5)


def test_model_arguments_cannot_choose_the_workspace(env: Env, worker: WorkerProcess, tmp_path: Path) -> None:
    other = "00000000-0000-4000-8000-000000000000"
    for extra in ({"workspace_id": other}, {"workspace": str(tmp_path)}, {"path": "/tmp/x.json"}):
        error = tool_error(worker, env, "memory_set", key="k", value="v", **extra)
        assert "unknown argument" in error
    assert "unknown argument" in tool_error(worker, env, "memory_list", prefix="", paths={})
    assert not (Path(env.paths["data_dir"]) / "workspaces").exists()


def test_workspaces_are_isolated_and_resolved_from_the_context(env: Env, worker: WorkerProcess, tmp_path: Path) -> None:
    project_a, project_b = tmp_path / "a", tmp_path / "b"
    project_a.mkdir()
    project_b.mkdir()
    for project, value in ((project_a, "for a"), (project_b, "for b")):
        response = frame(
            worker,
            env,
            "tool",
            {"name": "memory_set", "arguments": {"key": "k", "value": value}},
            workspace_id=None,
            workspace=str(project),
        )
        assert "data" in response, response
    for project, value in ((project_a, "for a"), (project_b, "for b")):
        response = frame(
            worker,
            env,
            "tool",
            {"name": "memory_get", "arguments": {"key": "k"}},
            workspace_id=None,
            workspace=str(project),
        )
        assert response["data"]["output"] == value
    registry = orjson.loads((Path(env.paths["data_dir"]) / "workspaces.json").read_bytes())
    ids = {entry["id"] for entry in registry["workspaces"].values()}
    assert {path.name for path in (Path(env.paths["data_dir"]) / "workspaces").iterdir()} == ids
    # The explicit id's workspace saw none of it.
    assert "no entry" in tool_error(worker, env, "memory_get", key="k")


def test_no_workspace_in_context_is_an_error(env: Env, worker: WorkerProcess) -> None:
    response = frame(worker, env, "tool", {"name": "memory_list", "arguments": {}}, workspace_id=None)
    assert "neither workspace_id nor workspace" in response["error"]


UNICODE_SAMPLES = [
    ("\u65e5\u672c\u8a9e\u306e\u30ad\u30fc", "\u5024\u306f\u300c\u30e1\u30e2\u300d\u3067\u3059"),
    ("emoji \U0001f469\u200d\U0001f4bb\U0001f3f3\ufe0f\u200d\U0001f308", "astral \U0001d518\U0001d52b and \U0001f389"),
    ("\u05e2\u05d1\u05e8\u05d9\u05ea", "right-to-left \u200fmark\u200f and \u0627\u0644\u0639\u0631\u0628\u064a\u0629"),
    ("combining \u00e9", "NFC \u00e9 and NFD e\u0301 stay distinct"),
    ("zero\u200bwidth", "nul \u0000 and \x7f in values are fine\n\ttoo"),
    ("\ufeffbom", "\ufffd replacement char and U+FFFF \uffff"),
]


def test_any_unicode_round_trips_through_the_process(env: Env, worker: WorkerProcess) -> None:
    for key, value in UNICODE_SAMPLES:
        tool(worker, env, "memory_set", key=key, value=value)
    for key, value in UNICODE_SAMPLES:
        assert tool(worker, env, "memory_get", key=key) == value
    assert stored(env) == dict(UNICODE_SAMPLES)
    # NFC and NFD spellings are different keys: nothing is normalised behind the model's back.
    tool(worker, env, "memory_set", key="combining e\u0301", value="nfd")
    assert tool(worker, env, "memory_get", key="combining \u00e9") == UNICODE_SAMPLES[3][1]
    assert tool(worker, env, "memory_get", key="combining e\u0301") == "nfd"


def test_disabled_module_refuses_tools(env: Env) -> None:
    env.write_config({"enabled": False})
    worker = env.spawn()
    error = tool_error(worker, env, "memory_set", key="k", value="v")
    assert "memory is disabled" in error and str(env.config_file) in error
    assert not env.memory_file.exists()


def test_unknown_tool_is_an_error(env: Env, worker: WorkerProcess) -> None:
    assert "unknown tool 'memory_search'" in tool_error(worker, env, "memory_search", query="x")
