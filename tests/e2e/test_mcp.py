"""MCP stdio servers as tools, through the real core: a real SDK server, the approval gate, the
result in the model's next request, and servers that crash or hang without stopping the session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson

from i_mcp.settings import MAX_IDLE_TIMEOUT_S as MAX_TIMEOUT_S
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

SERVER = Path(__file__).resolve().parents[2] / "packages" / "worker-mcp" / "tests" / "fixture_server.py"


def _mcp_json(config_dir: Path, timeout: float = MAX_TIMEOUT_S) -> None:
    """mcp.json with the fixture server; ``timeout`` is i-mcp's per-server limit (at most 14 s, under
    the core's 15 s hook deadline), so a scaled test timeout is capped there."""
    entry = {"command": sys.executable, "args": [str(SERVER)], "timeout": min(timeout, MAX_TIMEOUT_S)}
    (config_dir / "mcp.json").write_bytes(orjson.dumps({"mcpServers": {"fixture": entry}}))


def _tool_messages(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


def _echo_steps() -> list[dict]:
    return [{"tool_calls": [{"name": "mcp__fixture__echo", "arguments": {"text": "hello"}}]}, {"text": "done"}]


def test_the_model_calls_an_mcp_tool_through_the_approval_gate(i, write_config, plugins, project, dirs):
    plugins("mcp")
    _mcp_json(dirs["config"])
    with ScriptedModel(_echo_steps() + _echo_steps()) as model:
        write_config(model.base_url)
        refused = i("-C", str(project), "say hello")
        allowed = i("-C", str(project), "--yolo", "say hello")
    assert refused.returncode == 0, refused.stderr
    assert allowed.returncode == 0, allowed.stderr
    # The model was offered the server's tool under its mcp__ name, with the server's schema.
    offered = {tool["function"]["name"]: tool["function"] for tool in model.requests[0].body["tools"]}
    assert offered["mcp__fixture__echo"]["parameters"]["properties"]["text"]["type"] == "string"
    # Non-interactive without --yolo: the gate refuses, nothing reaches the server.
    (refusal,) = _tool_messages(model.requests[1])
    assert "needs the user's approval" in refusal and "echo:" not in refusal
    # With --yolo the call runs and its result is the next request's tool message.
    assert _tool_messages(model.requests[3]) == ["echo: hello"]


def test_an_approval_policy_allows_mcp_tools_in_the_standard_profile(i, write_config, plugins, project, dirs):
    plugins("standard", disabled=["web", "memory", "cache"])
    _mcp_json(dirs["config"])
    (dirs["config"] / "approval.json").write_bytes(orjson.dumps({"mode": "auto"}))
    with ScriptedModel(_echo_steps()) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "say hello")
    assert result.returncode == 0, result.stderr
    assert _tool_messages(model.requests[1]) == ["echo: hello"]


def test_a_server_that_crashes_or_hangs_is_a_tool_error_and_the_session_goes_on(
    i, write_config, plugins, project, dirs
):
    plugins("mcp")
    hang_limit = min(scaled(2), MAX_TIMEOUT_S)  # must hold while the server starts and lists, and fire for the hang
    _mcp_json(dirs["config"], timeout=hang_limit)
    steps = [
        {"tool_calls": [{"name": "mcp__fixture__crash", "arguments": {}}]},
        {"tool_calls": [{"name": "mcp__fixture__hang", "arguments": {}}]},
        {"tool_calls": [{"name": "mcp__fixture__picture", "arguments": {}}]},
        {"text": "survived"},
        *_echo_steps(),
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        first = i("-C", str(project), "--yolo", "--session-name", "s", "try the tools")
        second = i("-C", str(project), "--yolo", "--session-name", "s", "and again")
    assert first.returncode == 0, first.stderr
    assert "survived" in first.stdout
    crashed = _tool_messages(model.requests[1])[-1]
    assert crashed.startswith("error: ") and "MCP server 'fixture' exited during the call of 'crash'" in crashed
    hung = _tool_messages(model.requests[2])[-1]
    assert f"MCP server 'fixture' did not answer the call of 'hang' within {hang_limit:g} s" in hung
    # After both failures the server starts again: its image reaches the model as an image part.
    images = [
        part
        for m in model.requests[3].body["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part.get("type") == "image_url"
    ]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    # The next turn of the same session works.
    assert second.returncode == 0, second.stderr
    assert _tool_messages(model.requests[5])[-1] == "echo: hello"


def test_a_literal_secret_in_a_required_entry_stops_the_start_as_a_configuration_error(
    i, write_config, plugins, project, dirs
):
    plugins("mcp")
    secret = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    entry = {"command": sys.executable, "args": [str(SERVER)], "env": {"GITHUB_TOKEN": secret}, "required": True}
    (dirs["config"] / "mcp.json").write_bytes(orjson.dumps({"mcpServers": {"fixture": entry}}))
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "hi")
    assert result.returncode == 3, result.stderr  # a configuration error, naming the file and the field
    assert f"{dirs['config'] / 'mcp.json'}: mcpServers.fixture.env.GITHUB_TOKEN" in result.stderr
    assert "hook failed" not in result.stderr and secret not in result.stderr
    assert model.requests == []


def test_an_invalid_mcp_json_exits_3_naming_the_file_and_the_field(i, write_config, plugins, project, dirs):
    plugins("mcp")
    (dirs["config"] / "mcp.json").write_bytes(b'{"mcpServers": []}')
    with ScriptedModel([{"text": "never"}]) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "hi")
    assert result.returncode == 3, result.stderr
    assert "mcp.json: mcpServers must be an object" in result.stderr.strip().splitlines()[-1]


def test_a_broken_server_is_left_out_and_named_with_its_stderr_while_the_healthy_one_answers(
    i, write_config, plugins, project, dirs
):
    plugins("mcp")
    said = "Error: None of the specified directories are accessible"
    broken = {"command": sys.executable, "args": [str(SERVER)], "env": {"FIXTURE_FAIL_START": said}}
    secret = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
    github = {"command": "github-mcp-server", "args": ["stdio"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": secret}}
    healthy = {"command": sys.executable, "args": [str(SERVER)]}
    servers = {"fs": broken, "github": github, "fixture": healthy}
    (dirs["config"] / "mcp.json").write_bytes(orjson.dumps({"mcpServers": servers}))
    with ScriptedModel(_echo_steps() + _echo_steps()) as model:
        write_config(model.base_url)
        first = i("-C", str(project), "--yolo", "say hello")
        second = i("-C", str(project), "--yolo", "--json", "say hello")
    assert first.returncode == 0, first.stderr
    assert _tool_messages(model.requests[1]) == ["echo: hello"]
    offered = {tool["function"]["name"] for tool in model.requests[0].body["tools"]}
    assert "mcp__fixture__echo" in offered and not any(
        name.startswith(("mcp__fs__", "mcp__github__")) for name in offered
    )
    warnings = [line for line in first.stderr.splitlines() if line.startswith("i: warning:")]
    assert len(warnings) == 2, first.stderr  # once each
    (fs,) = [line for line in warnings if "'fs'" in line]
    (gh,) = [line for line in warnings if "mcpServers.github" in line]
    assert "MCP server 'fs' could not start" in fs and said in fs
    assert "mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN" in gh and secret not in first.stderr
    # Never kept: the next session tries again and says so again, in --json too.
    assert second.returncode == 0, second.stderr
    result = orjson.loads(second.stdout)
    assert result["exit"] == 0 and len(result["warnings"]) == 2
    assert any(said in warning for warning in result["warnings"])


def test_the_reference_servers_from_pypi_list_their_tools_and_answer(i, write_config, plugins, project, dirs):
    """mcp-server-time and mcp-server-git (installed in this env by tox.ini), started by their console scripts."""
    plugins("mcp")
    bin_dir = Path(sys.executable).parent
    servers = {
        "time": {"command": str(bin_dir / "mcp-server-time"), "args": ["--local-timezone", "UTC"]},
        "git": {"command": str(bin_dir / "mcp-server-git"), "args": ["--repository", str(project)]},
    }
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (dirs["config"] / "mcp.json").write_bytes(orjson.dumps({"mcpServers": servers}))
    call = {
        "name": "mcp__time__convert_time",
        "arguments": {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"},
    }
    with ScriptedModel([{"tool_calls": [call]}, {"text": "done"}]) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "what time is it in Tokyo at noon UTC")
    assert result.returncode == 0, result.stderr
    offered = {tool["function"]["name"] for tool in model.requests[0].body["tools"]}
    assert {"mcp__time__get_current_time", "mcp__time__convert_time"} <= offered
    assert "mcp__git__git_status" in offered and len([n for n in offered if n.startswith("mcp__git__")]) >= 10
    (answer,) = _tool_messages(model.requests[1])
    assert "21:00" in answer and "Asia/Tokyo" in answer


def test_check_mcp_passes_for_the_installed_worker(i):
    result = i("--runtime", "check", "mcp", timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 failed" in result.stdout


def test_a_second_run_offers_the_kept_mcp_tools_and_starts_the_worker_only_to_call_one(
    i, write_config, plugins, project, dirs, tmp_path
):
    """The first run asks the MCP worker for its tools and keeps the answer; the next ones offer the
    same tools without starting the worker, until mcp.json changes; a call still reaches the server."""
    import shlex

    plugins("mcp")
    _mcp_json(dirs["config"])
    marker, wrapper = tmp_path / "mcp.starts", tmp_path / "i-mcp-marked"
    wrapper.write_text(
        f'#!/bin/sh\necho "$$" >> {shlex.quote(str(marker))}\nexec {Path(sys.executable).parent / "i-mcp"} "$@"\n'
    )
    wrapper.chmod(0o755)
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"mcp": {"exec": [str(wrapper)]}}))

    def starts() -> int:
        return len(marker.read_text().split()) if marker.exists() else 0

    steps = [{"text": "one"}, {"text": "two"}, *_echo_steps(), {"text": "four"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        for expected_starts, args in ((1, ()), (1, ()), (2, ("--yolo",))):
            result = i("-C", str(project), *args, "say hello")
            assert result.returncode == 0, result.stderr
            assert starts() == expected_starts
        _mcp_json(dirs["config"], timeout=scaled(13))  # mcp.json changed: the worker is asked again
        result = i("-C", str(project), "say hello")
        assert result.returncode == 0, result.stderr
        assert starts() == 3
    offered = [[tool["function"] for tool in request.body["tools"]] for request in model.requests]
    assert all(tools == offered[0] for tools in offered)  # kept or asked, the very same tools
    assert "mcp__fixture__echo" in {tool["name"] for tool in offered[0]}
    assert _tool_messages(model.requests[3]) == ["echo: hello"]


def test_an_mcp_image_under_inits_config_is_left_out_then_sent_once_image_tokens_is_set(i, project, dirs):
    """The config `i --runtime init` writes for a local server (no budget.image_tokens: it documents
    none) and the standard profile (budget included): the MCP image is not sent, the turn completes,
    and the kept image goes out once image_tokens is set."""
    _mcp_json(dirs["config"])
    steps = [
        {"tool_calls": [{"name": "mcp__fixture__picture", "arguments": {}}]},
        {"text": "left out"},
        {"text": "seen"},
    ]
    with ScriptedModel(steps, context_window=100000) as model:
        init = i("--runtime", "init", "--base-url", model.base_url, "--model", "scripted-1")
        assert init.returncode == 0, init.stderr
        assert "budget.image_tokens is not set: " in init.stderr
        path = dirs["config"] / "config.json"
        config = orjson.loads(path.read_bytes())
        assert "image_tokens" not in config["budget"]
        assert orjson.loads((dirs["config"] / "plugins.json").read_bytes())["profile"] == "standard"
        config["budget"].setdefault("context_window", 100000)  # what init asks the user to set
        path.write_bytes(orjson.dumps(config))
        first = i("-C", str(project), "--yolo", "--session-name", "s", "show me the picture")
        assert first.returncode == 0, first.stderr
        assert "left out" in first.stdout and "Set budget.image_tokens" in first.stderr
        assert b"data:image/png" not in orjson.dumps(model.requests[1].body)
        config["budget"]["image_tokens"] = 1000
        path.write_bytes(orjson.dumps(config))
        second = i("-C", str(project), "--yolo", "--session-name", "s", "and now?")
    assert second.returncode == 0, second.stderr
    assert b"data:image/png" in orjson.dumps(model.requests[2].body)


def test_runtime_versions_shows_each_mcp_server_from_i_mcp_list(i, plugins, dirs):
    plugins("mcp")
    _mcp_json(dirs["config"])
    result = i("--runtime", "versions")
    assert "mcp servers (" in result.stdout, result.stdout + result.stderr
    assert "  fixture: not listed yet (it starts at the next session)" in result.stdout
