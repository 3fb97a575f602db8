"""A broken server is left out and said (``problems``) when the core shows problems; otherwise, and
for a required server, ``tools_list`` fails as before. Real i-mcp processes, real SDK servers."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from i_mcp.cache import cache_file
from i_protocol import ErrorFrame
from i_protocol.testing import wait_until

SHOWS_PROBLEMS = {"tools": [], "problems": []}


def _names(answer: dict) -> set[str]:
    return {tool["name"].split("__")[1] for tool in answer["tools"]}


def test_a_broken_server_is_left_out_with_its_stderr_and_the_healthy_one_answers(env):
    message = "Error: None of the specified directories are accessible"
    env.write_config(
        {
            "healthy": env.server(),
            "exits": env.server(env={"FIXTURE_FAIL_START": message}),
            "missing": {"command": "no-such-mcp-server-program"},
        }
    )
    worker = env.spawn()
    answer = env.call(worker, "tools_list", dict(SHOWS_PROBLEMS))
    assert _names(answer) == {"healthy"}
    problems = {problem["server"]: problem for problem in answer["problems"]}
    assert sorted(problems) == ["exits", "missing"]
    assert problems["exits"]["reason"] == "failed"
    assert problems["exits"]["stderr_tail"] == message  # the reason the server gave, not "connection closed"
    assert message in problems["exits"]["message"]
    assert "no-such-mcp-server-program: no such program" in problems["missing"]["message"]
    call = {"name": "mcp__healthy__echo", "arguments": {"text": "hi"}}
    assert env.call(worker, "tool", call) == {"output": "echo: hi"}


def test_without_the_problems_field_a_broken_server_still_fails_tools_list(env):
    env.write_config({"healthy": env.server(), "exits": env.server(env={"FIXTURE_FAIL_START": "bad folder"})})
    with pytest.raises(ErrorFrame, match=r"MCP server 'exits' could not start.*its stderr ends: bad folder"):
        env.call(env.spawn(), "tools_list", {"tools": []})


def test_a_required_server_fails_tools_list_even_when_problems_are_shown(env):
    env.write_config({"healthy": env.server(), "needed": env.server(required=True, env={"FIXTURE_FAIL_START": "x"})})
    with pytest.raises(ErrorFrame, match="MCP server 'needed' could not start"):
        env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))


def test_a_literal_token_in_one_entry_leaves_that_server_out_without_echoing_it(env):
    secret = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    env.write_config({"healthy": env.server(), "github": env.server(env={"GITHUB_TOKEN": secret})})
    answer = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))
    assert _names(answer) == {"healthy"}
    (problem,) = answer["problems"]
    assert problem["server"] == "github" and problem["reason"] == "config"
    assert "mcpServers.github.env.GITHUB_TOKEN" in problem["message"] and secret not in str(answer)


def test_a_configuration_error_is_an_error_frame_of_kind_config(env):
    env.write_config({"s": env.server(env={"TOKEN_FILE": "${GITHUB_TOKEN}"})})
    with pytest.raises(ErrorFrame) as caught:
        env.call(env.spawn(), "tools_list", {"tools": []})
    assert caught.value.kind == "config"
    assert "mcpServers.s.env.TOKEN_FILE: ${GITHUB_TOKEN} is not a variable i-mcp has" in caught.value.message


def test_a_slow_server_is_reported_as_starting_and_offered_once_it_has_started(env):
    env.write_config({"healthy": env.server()})
    env.call(env.spawn(), "tools_list", {"tools": []})  # its list cached: no start to wait for
    env.write_config({"healthy": env.server(), "slow": env.server(env={"FIXTURE_START_DELAY": "2"})})
    worker = env.spawn(I_MCP_LIST_WAIT_S="0.5")
    answer = env.call(worker, "tools_list", dict(SHOWS_PROBLEMS))
    # The first answer does not wait for it: the healthy server's tools, the slow one said to be starting.
    assert _names(answer) == {"healthy"}
    assert [(p["server"], p["reason"]) for p in answer["problems"]] == [("slow", "starting")]
    # It goes on starting in the background and its list is cached once it is up ...
    slow = cache_file(env.paths["cache_dir"], _digest(env, "slow"))
    assert wait_until(slow.exists, timeout=30)
    starts = env.starts()
    # ... so the next session (a new worker) offers it, without starting anything, and says no problem.
    again = env.call(env.spawn(I_MCP_LIST_WAIT_S="0.5"), "tools_list", dict(SHOWS_PROBLEMS))
    assert _names(again) == {"healthy", "slow"} and again["problems"] == []
    assert env.starts() == starts


def _digest(env, name: str) -> str:
    from i_mcp.settings import parse_servers
    from i_protocol.config import load_config_file

    path = env.paths["config_dir"] + "/mcp.json"
    config = load_config_file(path, required=True)
    specs = parse_servers(config.data, path, config.base_dir, {"HOME": str(env.root)})
    return next(spec.digest for spec in specs if spec.name == name)


def test_list_shows_each_servers_state_and_tools(env):
    import subprocess

    exe = Path(sys.executable).parent / "i-mcp"

    env.write_config(
        {"fixture": env.server(), "exits": env.server(env={"FIXTURE_FAIL_START": "bad folder"}), "bad": {"args": []}}
    )
    dirs = {f"I_{key.removesuffix('_dir').upper()}_DIR": value for key, value in env.paths.items()}
    run_env = {"PATH": os.environ.get("PATH", ""), "HOME": str(env.root), **dirs}

    def listing(*args: str) -> list[str]:
        done = subprocess.run([str(exe), "--list", *args], env=run_env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout.splitlines()

    before = listing()
    assert before[1].startswith("bad: invalid: ") and "mcpServers.bad.command" in before[1]
    assert before[2:] == [
        "fixture: not listed yet (it starts at the next session)",
        "exits: not listed yet (it starts at the next session)",
    ]
    assert env.starts() == 0  # nothing started without --start
    started = listing("--start")
    assert started[2].startswith("fixture: ok, 7 tools: echo, picture")
    assert started[3].startswith("exits: failed: MCP server 'exits' could not start") and "bad folder" in started[3]
    assert listing()[2].startswith("fixture: listed, 7 tools")


def test_an_approved_project_file_adds_its_servers_and_a_changed_one_is_left_out(env):
    import hashlib

    import orjson

    env.write_config({"user": env.server()})
    project_file = env.workspace / ".mcp.json"
    content = orjson.dumps({"mcpServers": {"proj": env.server(), "user": {"command": "other"}}})
    project_file.write_bytes(content)
    approved = {"path": str(project_file), "sha256": hashlib.sha256(content).hexdigest()}
    worker = env.spawn()
    answer = env.call_with(worker, "tools_list", dict(SHOWS_PROBLEMS), mcp_project=approved)
    assert _names(answer) == {"user", "proj"}
    (clash,) = answer["problems"]
    assert clash["server"] == "user" and "the user's mcp.json names a server 'user' too" in clash["message"]
    assert str(project_file) in [stamp["path"] for stamp in answer["depends_on"]]
    # Changed after its approval: not used at all.
    project_file.write_bytes(content + b" ")
    changed = env.call_with(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS), mcp_project=approved)
    assert _names(changed) == {"user"}
    assert [p["message"] for p in changed["problems"]] == [
        f"{project_file} changed since it was approved; it is not used"
    ]
    # Without the core's word (no mcp_project), the file is never read.
    assert _names(env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))) == {"user"}
