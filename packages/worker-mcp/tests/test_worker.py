"""The real i-mcp process against a real SDK server: tools_list, calls, failures, the cache, env files."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from i_mcp.cache import cache_file
from i_protocol import ErrorFrame
from i_protocol.testing import scaled, wait_until


def test_tools_list_announces_every_tool_under_its_mcp_name_and_keeps_other_fields(env):
    env.write_config({"fixture": env.server()})
    answer = env.call(env.spawn(), "tools_list", {"tools": [], "x_unrelated": 1})
    assert answer["x_unrelated"] == 1
    tools = {tool["name"]: tool for tool in answer["tools"]}
    assert sorted(tools) == [
        "mcp__fixture__big",
        "mcp__fixture__crash",
        "mcp__fixture__echo",
        "mcp__fixture__env_value",
        "mcp__fixture__hang",
        "mcp__fixture__picture",
        "mcp__fixture__steps",
    ]  # not as_task: it runs only as an MCP task, which i-mcp does not run
    echo = tools["mcp__fixture__echo"]
    assert echo["description"] == "(MCP server 'fixture', tool 'echo') Echo the text back."
    assert echo["parameters"]["type"] == "object" and echo["parameters"]["required"] == ["text"]


def test_no_mcp_json_means_no_tools_and_no_server(env):
    worker = env.spawn()
    answer = env.call(worker, "tools_list", {"tools": []})
    assert answer["tools"] == []
    absent = {"path": os.path.join(env.paths["config_dir"], "mcp.json"), "size": None, "mtime_ns": None, "ino": None}
    assert answer["depends_on"][0] == absent  # creating mcp.json changes the answer
    with pytest.raises(ErrorFrame, match=r"unknown tool 'mcp__x__y'; the MCP servers of mcp\.json provide: none"):
        env.call(worker, "tool", {"name": "mcp__x__y", "arguments": {}})


def test_a_call_returns_text_and_images_and_the_session_stays_open(env):
    env.write_config({"fixture": env.server()})
    worker = env.spawn()
    env.call(worker, "tools_list", {"tools": []})
    for text in ("one", "two"):
        assert env.call(worker, "tool", {"name": "mcp__fixture__echo", "arguments": {"text": text}}) == {
            "output": f"echo: {text}"
        }
    picture = env.call(worker, "tool", {"name": "mcp__fixture__picture", "arguments": {}})
    assert picture["images"][0]["image_url"]["url"].startswith("data:image/png;base64,iVBORw0KGgo")
    assert env.starts() == 1  # listed and called on one session


def test_the_cache_lets_a_new_worker_start_without_starting_the_server(env):
    env.write_config({"fixture": env.server()})
    env.call(env.spawn(), "tools_list", {"tools": []})
    assert env.starts() == 1
    fresh = env.spawn()
    answer = env.call(fresh, "tools_list", {"tools": []})
    assert len(answer["tools"]) == 7 and env.starts() == 1  # answered from the cache: no server started
    # The server starts on its first call.
    assert env.call(fresh, "tool", {"name": "mcp__fixture__echo", "arguments": {"text": "x"}})["output"] == "echo: x"
    assert env.starts() == 2


def test_a_call_to_a_fresh_worker_finds_its_tool_without_tools_list(env):
    env.write_config({"fixture": env.server()})
    answer = env.call(env.spawn(), "tool", {"name": "mcp__fixture__echo", "arguments": {"text": "x"}})
    assert answer == {"output": "echo: x"}


def test_a_crash_and_a_hang_are_tool_errors_within_the_deadline_and_the_next_call_works(env):
    deadline = scaled(1.5)  # the server's own timeout: it must hold for listing, and fire for the hang
    env.write_config({"fixture": env.server(timeout=deadline)})
    worker = env.spawn()
    crashed = env.call(worker, "tool", {"name": "mcp__fixture__crash", "arguments": {}})
    assert crashed["is_error"] is True
    assert crashed["output"].startswith("error: MCP server 'fixture' exited during the call of 'crash'")
    starts = env.starts()
    hung = env.call(worker, "tool", {"name": "mcp__fixture__hang", "arguments": {}})
    assert hung == {  # the worker answered (within the test's call deadline): the server's timeout fired
        "output": f"error: MCP server 'fixture' did not answer the call of 'hang' within {deadline:g} s; "
        "it was stopped and starts again on the next call",
        "is_error": True,
    }
    assert env.call(worker, "tool", {"name": "mcp__fixture__echo", "arguments": {"text": "y"}})["output"] == "echo: y"
    assert env.starts() == starts + 2  # the hang's server was stopped; the next call started a fresh one


def test_a_server_that_cannot_start_is_named(env):
    env.write_config({"broken": {"command": str(env.root / "no-such-program")}})
    with pytest.raises(ErrorFrame, match=r"MCP server 'broken' could not start: .*no-such-program"):
        env.call(env.spawn(), "tools_list", {"tools": []})


def test_an_env_file_reaches_only_its_own_server_and_never_the_cache(env, tmp_path):
    secret_file = tmp_path / "token"
    secret_file.write_text("s3cr3t-value\n")
    env.write_config(
        {
            "one": env.server(env={"SERVICE_TOKEN": {"file": str(secret_file)}}),
            "two": env.server(),
        }
    )
    worker = env.spawn()
    ask = {"name": "SERVICE_TOKEN"}
    assert env.call(worker, "tool", {"name": "mcp__one__env_value", "arguments": ask})["output"] == "s3cr3t-value"
    assert env.call(worker, "tool", {"name": "mcp__two__env_value", "arguments": ask})["output"] == ""
    cached = b"".join(path.read_bytes() for path in cache_file(env.paths["cache_dir"], "x").parent.iterdir())
    assert b"s3cr3t" not in cached


def test_an_invalid_mcp_json_fails_tools_list_naming_the_field(env):
    env.write_config({"fixture": {"command": "x", "args": "not a list"}})
    with pytest.raises(ErrorFrame, match=r"mcp.json: mcpServers\.fixture\.args must be an array of strings"):
        env.call(env.spawn(), "tools_list", {"tools": []})


def test_a_server_dies_with_its_worker_even_when_the_worker_is_killed(env):
    # The SDK starts each server in a session of its own, out of reach of a process-group kill;
    # i_mcp.launch arms the parent-death signal, so a SIGKILLed worker leaves no server behind.
    if not sys.platform.startswith("linux"):
        pytest.skip("the parent-death signal is Linux's")
    env.write_config({"fixture": env.server()})
    worker = env.spawn()
    env.call(worker, "tool", {"name": "mcp__fixture__echo", "arguments": {"text": "x"}})
    pid = int(env.log.read_text().split()[-1])
    os.kill(pid, 0)  # running
    worker.kill()
    if not wait_until(lambda: _is_gone(pid), 5):
        os.kill(pid, 9)
        pytest.fail(f"MCP server {pid} outlived its killed worker")


def _is_gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_depends_on_stamps_mcp_json_each_cached_list_and_this_package(env):
    """While these stamps hold, the core reuses the answer without starting the worker."""
    import i_mcp
    from i_protocol.files import file_stamp

    config = env.write_config({"fixture": env.server()})
    first = env.call(env.spawn(), "tools_list", {"tools": []})  # lists the server, writes its cache
    (cached,) = (Path(env.paths["cache_dir"]) / "mcp" / "tools").glob("*.json")
    paths = [stamp["path"] for stamp in first["depends_on"]]
    assert paths[:2] == [str(config), str(cached)]
    package = Path(i_mcp.__file__).parent
    assert str(package / "worker.py") in paths and str(package / "__about__.py") in paths
    assert all(stamp == file_stamp(stamp["path"]) for stamp in first["depends_on"])  # all hold now
    second = env.call(env.spawn(), "tools_list", {"tools": []})  # from the cache: the same stamps
    assert second["depends_on"] == first["depends_on"] and env.starts() == 1
    env.write_config({"fixture": env.server(timeout=5)})
    assert file_stamp(config) != first["depends_on"][0]
