"""shell: real /bin/sh processes, timeouts that kill the group, output caps, environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from i_core.tools import ToolContext, ToolError, execute, prepare
from i_protocol.testing import scaled, wait_dead


def shell(ctx: ToolContext, command: str, **extra: object):
    return execute(prepare("shell", {"command": command, **extra}, ctx), ctx)


def test_exit_code_and_merged_output(tmp_path: Path) -> None:
    result = shell(ToolContext(tmp_path), "echo out; echo err >&2; exit 3")
    assert result.output == "out\nerr\n[exit code 3]"
    assert not result.is_error
    assert shell(ToolContext(tmp_path), "true").output == "(no output)\n[exit code 0]"


def test_runs_in_workspace_with_empty_stdin(tmp_path: Path) -> None:
    result = shell(ToolContext(tmp_path), "pwd; cat; echo done")
    assert result.output == f"{tmp_path}\ndone\n[exit code 0]"


def test_environment_has_no_approval_token(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I_APPROVAL_TOKEN", "secret-token")
    monkeypatch.setenv("VISIBLE_VAR", "yes")
    ctx = ToolContext(tmp_path)
    assert "I_APPROVAL_TOKEN" not in ctx.env
    out = shell(ctx, "env").output
    assert "VISIBLE_VAR=yes" in out and "secret-token" not in out
    # Even an env handed in with the token loses it.
    leaky = ToolContext(tmp_path, env={"I_APPROVAL_TOKEN": "leak", "PATH": os.environ["PATH"]})
    assert "leak" not in shell(leaky, "env").output


def test_timeout_kills_the_process_group(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    ctx = ToolContext(tmp_path)
    # A grandchild that ignores SIGTERM and would outlive the shell.
    command = f"sh -c 'trap \"\" TERM; echo $$ > {pidfile}; while :; do sleep 0.05; done' & echo started; wait"
    result = shell(ctx, command, timeout=1)
    assert result.is_error
    assert result.output.startswith("started\n")
    assert "[timed out after 1 s; the command's process group was killed]" in result.output
    child = int(pidfile.read_text())
    assert wait_dead([child], 5.0) == []


def test_background_child_holding_the_pipe_does_not_hang(tmp_path: Path) -> None:
    result = shell(ToolContext(tmp_path), "sleep 30 & echo quick", timeout=scaled(60))
    assert result.output == "quick\n[exit code 0]"


def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path, max_output_chars=1000)
    result = shell(ctx, "echo FIRST; yes middle | head -n 100000; echo LAST")
    assert result.output.startswith("FIRST\n")
    assert result.output.endswith("LAST\n[exit code 0]")
    assert "bytes of output cut (cap of 1000 bytes)" in result.output
    assert len(result.output) < 1200


def test_killed_by_signal(tmp_path: Path) -> None:
    assert shell(ToolContext(tmp_path), "kill -9 $$").output.endswith("[killed by signal 9]")


def test_invalid_utf8_output(tmp_path: Path) -> None:
    out = shell(ToolContext(tmp_path), r"printf 'a\377b\n'").output
    assert out == "a\ufffdb\n[exit code 0]"


def test_bad_arguments(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path)
    with pytest.raises(ToolError, match="shell: missing required argument 'command'"):
        prepare("shell", {}, ctx)
    with pytest.raises(ToolError, match="argument 'timeout' must be greater than 0 and at most 600"):
        prepare("shell", {"command": "true", "timeout": 601}, ctx)
    with pytest.raises(ToolError, match="argument 'timeout' must be greater than 0"):
        prepare("shell", {"command": "true", "timeout": 0}, ctx)
    with pytest.raises(ToolError, match="argument 'timeout' must be a number"):
        prepare("shell", {"command": "true", "timeout": "5"}, ctx)
    with pytest.raises(ToolError, match="not valid Unicode"):
        prepare("shell", {"command": "echo \ud800"}, ctx)


def test_summary(tmp_path: Path) -> None:
    assert prepare("shell", {"command": "ls -la"}, ToolContext(tmp_path)).summary == "shell: ls -la"
