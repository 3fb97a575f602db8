"""Plan mode and the sandboxed shell through the real `i` process, the bundled approval worker and
the scripted model over real HTTP."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_protocol.testing import scaled
from i_scripted import ScriptedModel


@pytest.fixture
def env(dirs):
    return {**os.environ, "TEST_MODEL_KEY": "sk-test-secret-value-1234567890"}


def _config(dirs, model: ScriptedModel) -> None:
    config = {
        "protocol": "openai",
        "base_url": model.base_url,
        "model": "scripted-1",
        "api_key_env": "TEST_MODEL_KEY",
        "stream": False,
        "budget": {"context_window": 100000},
    }
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
    # The approval profile: the bundled approval worker answers tool_approval.
    (dirs["config"] / "builtin.json").write_text('{"builtin_profile":"approval"}')


def _i(env, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "i_core", *args],
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=scaled(120),
    )


def _tool_results(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m.get("role") == "tool"]


def _call(name: str, arguments: dict[str, object]) -> dict[str, object]:
    return {"name": name, "arguments": arguments}


# -- plan mode ------------------------------------------------------------------------------------


def test_plan_mode_refuses_a_write_the_model_tries_and_the_session_goes_on(env, dirs, project):
    steps = [
        {"tool_calls": [_call("read", {"path": "README.md"}), _call("write", {"path": "new.txt", "content": "x"})]},
        {"tool_calls": [_call("shell", {"command": "touch made-by-shell"})]},
        {"text": "Plan: 1. create new.txt. 2. done."},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        result = _i(env, "-C", str(project), "--plan", "--yolo", "add new.txt")
    assert result.returncode == 0, result.stderr
    assert "Plan: 1. create new.txt" in result.stdout
    read, write = _tool_results(model.requests[1])
    assert "demo project" in read
    assert write.startswith("error: not run: the session is in plan mode, where write is refused")
    assert _tool_results(model.requests[2])[-1].startswith("error: not run: the session is in plan mode")
    assert not (project / "new.txt").exists() and not (project / "made-by-shell").exists()
    # The same tools are offered (the prompt prefix stays valid); the note opens the user's message.
    first = model.requests[0].body
    assert {t["function"]["name"] for t in first["tools"]} >= {"write", "edit", "shell"}
    user = first["messages"][1]["content"]
    texts = [part["text"] for part in user] if isinstance(user, list) else [user]
    assert texts[0].startswith("[plan mode:") and texts[-1] == "add new.txt"
    assert first["messages"][0]["content"] == _system_prompt_without_plan(env, dirs, project)


def _system_prompt_without_plan(env, dirs, project) -> str:
    with ScriptedModel([{"text": "ok"}]) as model:
        _config(dirs, model)
        result = _i(env, "-C", str(project), "hello")
    assert result.returncode == 0, result.stderr
    return str(model.requests[0].body["messages"][0]["content"])


def test_without_plan_mode_the_same_write_runs(env, dirs, project):
    steps = [{"tool_calls": [_call("write", {"path": "new.txt", "content": "x"})]}, {"text": "done"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        result = _i(env, "-C", str(project), "--yolo", "add new.txt")
    assert result.returncode == 0, result.stderr
    assert (project / "new.txt").read_text() == "x"
    user = model.requests[0].body["messages"][1]["content"]
    assert "plan mode" not in str(user)


# -- permission rules through the real run ----------------------------------------------------------


def test_a_deny_rule_holds_against_a_compound_command_even_with_yolo(env, dirs, project):
    (dirs["config"] / "approval.json").write_text('{"deny":["shell(rm:*)"]}')
    (project / "keep.txt").write_text("keep")
    steps = [
        {"tool_calls": [_call("shell", {"command": "echo hi && rm keep.txt"})]},
        {"tool_calls": [_call("shell", {"command": "sh -c 'rm keep.txt'"})]},
        {"tool_calls": [_call("shell", {"command": "echo fine"})]},
        {"text": "done"},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        result = _i(env, "-C", str(project), "--yolo", "go")
    assert result.returncode == 0, result.stderr
    assert "denied by the approval policy" in _tool_results(model.requests[1])[0]
    # A wrapper may hide a denied command: it asks, and nobody is there to answer.
    assert "needs the user's approval" in _tool_results(model.requests[2])[-1]
    assert "fine" in _tool_results(model.requests[3])[-1]
    assert (project / "keep.txt").read_text() == "keep"


# -- the sandboxed shell --------------------------------------------------------------------------


def _landlock_reason() -> str | None:
    """Why the Landlock sandbox cannot run here, or None."""
    from i_core.sandbox import SandboxError, landlock_abi

    try:
        abi = landlock_abi()
    except SandboxError as exc:
        return str(exc)
    return None if abi >= 4 else f"Landlock ABI {abi} has no network rules (needs 4)"


needs_landlock = pytest.mark.skipif(_landlock_reason() is not None, reason=f"no Landlock: {_landlock_reason()}")


@needs_landlock
def test_the_workspace_write_sandbox_refuses_a_write_outside_and_a_connection(env, dirs, project, tmp_path):
    (dirs["config"] / "approval.json").write_text('{"sandbox":{"mode":"workspace-write"}}')
    outside = tmp_path / "outside.txt"
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    port = listener.getsockname()[1]
    connect = (
        f'{sys.executable} -c \'import socket; socket.create_connection(("127.0.0.1", {port}), 5); print("CONNECTED")\''
    )
    command = (
        f"echo in > inside.txt; echo out > {outside}; echo tmp > $TMPDIR/t && echo TMP-OK; {connect}; cat README.md"
    )
    steps = [{"tool_calls": [_call("shell", {"command": command})]}, {"text": "done"}]
    try:
        with ScriptedModel(steps) as model:
            _config(dirs, model)
            result = _i(env, "-C", str(project), "--yolo", "go")
    finally:
        listener.close()
    assert result.returncode == 0, result.stderr
    output = _tool_results(model.requests[1])[0]
    assert (project / "inside.txt").read_text() == "in\n"
    assert not outside.exists() and "Permission denied" in output
    assert "TMP-OK" in output and "CONNECTED" not in output and "demo project" in output


@needs_landlock
def test_the_read_only_sandbox_refuses_a_write_in_the_workspace(env, dirs, project):
    (dirs["config"] / "approval.json").write_text('{"sandbox":{"mode":"read-only","network":true}}')
    steps = [{"tool_calls": [_call("shell", {"command": "echo x > inside.txt; ls"})]}, {"text": "done"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        result = _i(env, "-C", str(project), "--yolo", "go")
    assert result.returncode == 0, result.stderr
    assert not (project / "inside.txt").exists()
    assert "README.md" in _tool_results(model.requests[1])[0]


def test_a_selected_sandbox_that_cannot_be_applied_never_runs_the_command(tmp_path: Path, monkeypatch):
    from i_core import sandbox
    from i_core.errors import ToolError
    from i_core.tools import ToolContext
    from i_core.tools.shell import run_shell

    def missing() -> int:
        raise sandbox.SandboxError("this kernel has no Landlock (needs Linux 5.13+)")

    monkeypatch.setattr(sandbox, "landlock_abi", missing)
    context = ToolContext(tmp_path, sandbox={"mode": "workspace-write", "network": False})
    with pytest.raises(ToolError, match="shell: not run: the workspace-write sandbox cannot be applied: this kernel"):
        run_shell("touch ran", 10, context)
    assert not (tmp_path / "ran").exists()


@needs_landlock
def test_a_sandbox_that_fails_in_the_child_is_an_error_not_an_unsandboxed_run(tmp_path: Path, monkeypatch):
    from i_core import sandbox
    from i_core.errors import ToolError
    from i_core.tools import ToolContext
    from i_core.tools.shell import run_shell

    monkeypatch.setattr(sandbox, "landlock_abi", lambda: 3)  # the child cannot honour a network rule
    monkeypatch.setattr(sandbox, "_DEVICES", ("/nonexistent-device",))
    context = ToolContext(tmp_path, sandbox={"mode": "workspace-write", "network": True})
    original = sandbox.sandboxed

    def with_missing_path(argv, mode, network, workspace):
        wrapped = original(argv, mode, network, workspace)
        helper_args = wrapped.argv
        index = helper_args.index("--")
        return sandbox.Sandboxed([*helper_args[:index], "/no/such/folder", *helper_args[index:]], wrapped.tmp)

    monkeypatch.setattr(sandbox, "sandboxed", with_missing_path)
    with pytest.raises(ToolError, match="shell: not run: cannot apply the sandbox: /no/such/folder"):
        run_shell("touch ran", 10, context)
    assert not (tmp_path / "ran").exists()


UDP_PROBE = """import socket
for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
    try:
        socket.socket(family, socket.SOCK_DGRAM).sendto(b"x", (host, 9))
        print("SENT", int(family))
    except OSError as exc:
        print("REFUSED", int(family), exc.errno)
"""


@needs_landlock
@pytest.mark.parametrize("network", [False, True])
def test_with_the_network_off_no_udp_datagram_leaves_and_with_it_on_one_does(tmp_path: Path, network: bool):
    from i_core.tools import ToolContext
    from i_core.tools.shell import run_shell

    (tmp_path / "udp.py").write_text(UDP_PROBE)
    context = ToolContext(tmp_path, sandbox={"mode": "workspace-write", "network": network})
    output = run_shell(f"{sys.executable} udp.py", 30, context).output
    if network:
        assert "SENT 2" in output, output
    else:  # Landlock has no UDP rule: the seccomp filter refuses the socket itself (EACCES)
        assert "REFUSED 2 13" in output and "SENT" not in output, output
