"""Ctrl-C during a long MCP call, through the real core: the call ends at once, the server dies with
i-mcp (the pool evicts the worker, its servers die with it), the session stays valid, and the next
call starts the server again and answers. On the console (a real pseudo-terminal) and headless
(SIGINT to a one-shot run, exit 130). Timings are reported by ``bench/mcp_long_tools.py``; here they
are only bounded, generously, so that "promptly" can fail."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from i_protocol.jsonsafe import loads_safe
from i_protocol.testing import scaled, wait_until
from i_scripted import ScriptedModel

pytestmark = pytest.mark.skipif(not Path("/proc/self").exists(), reason="finds the server's process in /proc")

BIN = Path(sys.executable).parent
SERVER = Path(__file__).resolve().parents[2] / "packages" / "worker-mcp" / "tests" / "fixture_server.py"
LONG_CALL = {"tool_calls": [{"name": "mcp__fixture__steps", "arguments": {"count": 3000, "every": 0.2}}]}
ECHO = {"tool_calls": [{"name": "mcp__fixture__echo", "arguments": {"text": "after"}}]}
PROMPTLY_S = 5.0
"""How soon after Ctrl-C the call must be over (scaled): the user sees it end at once; this only fails
a cancel that waits for the tool (10 minutes) or for a deadline (15 s)."""


def _setup(dirs: dict[str, Path], log: Path) -> None:
    entry = {"command": sys.executable, "args": [str(SERVER)], "env": {"FIXTURE_LOG": str(log)}, "timeout": 600}
    (dirs["config"] / "mcp.json").write_bytes(orjson.dumps({"mcpServers": {"fixture": entry}}))
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "mcp", "disabled": []}))
    (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')


def _write_config(dirs: dict[str, Path], model: ScriptedModel) -> None:
    # Default options (streaming on): what a user runs.
    config = {"protocol": "openai", "base_url": model.base_url, "model": "scripted-1", "retries": 0}
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))


def _servers(log: Path) -> list[int]:
    """The fixture servers started so far (their pids, from the log they append to)."""
    return [int(line.split()[1]) for line in log.read_text().splitlines()] if log.exists() else []


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _tool_messages(request) -> list[str]:
    return [m["content"] for m in request.body["messages"] if m["role"] == "tool"]


class Console:
    """``i`` on a pseudo-terminal."""

    def __init__(self, args: list[str], env: dict[str, str], cwd: Path) -> None:
        env = {**env, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200"}
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl-C as at a terminal
            os.chdir(cwd)
            os.execve(str(BIN / "i"), [str(BIN / "i"), *args], env)
        self.output = b""

    def read(self, timeout: float = 0.1) -> None:
        if select.select([self.fd], [], [], timeout)[0]:
            try:
                self.output += os.read(self.fd, 65536)
            except OSError:
                pass

    def wait_for(self, text: str, since: int = 0, timeout: float = 30) -> float:
        """Seconds until ``text`` appeared after byte ``since``."""
        started = time.monotonic()
        deadline = started + scaled(timeout)
        while text.encode() not in self.output[since:] and time.monotonic() < deadline:
            self.read()
        assert text.encode() in self.output[since:], (
            f"{text!r} not seen; output:\n{self.output.decode(errors='replace')}"
        )
        return time.monotonic() - started

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def close(self) -> int:
        deadline = time.monotonic() + scaled(30)
        while time.monotonic() < deadline:
            self.read(0.05)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError("i did not exit")


def test_ctrl_c_in_the_console_ends_a_long_mcp_call_and_the_next_call_works(env, dirs, project, tmp_path):
    log = tmp_path / "servers.log"
    _setup(dirs, log)
    with ScriptedModel([LONG_CALL, ECHO, {"text": "echoed"}]) as model:
        _write_config(dirs, model)
        console = Console(["-C", str(project), "--session-name", "s", "--yolo"], env, project)
        try:
            console.wait_for("> ")
            console.send(b"run the long tool\n")
            console.wait_for("step 2")  # the server's progress, on the progress line: the call is under way
            (server,) = _servers(log)
            mark = len(console.output)
            console.send(b"\x03")
            took = console.wait_for("[i] cancelled", since=mark)
            assert took < scaled(PROMPTLY_S)
            assert wait_until(lambda: not _running(server), scaled(PROMPTLY_S)), "the server outlived the cancel"
            console.wait_for("> run the long tool", since=mark)  # back at the prompt, the input ready to edit
            console.send(b"\x15and now echo\n")  # Ctrl-U clears it; the next message
            console.wait_for("echoed", since=mark)
            console.wait_for("> ", since=console.output.index(b"echoed", mark))
            console.send(b"/exit\n")
            assert console.close() == 0
        finally:
            if console.pid:
                try:
                    os.kill(console.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
    assert len(_servers(log)) == 2  # the call after the cancel started the server again
    assert _tool_messages(model.requests[2])[-1] == "echo: after"
    assert "and now echo" in str(model.requests[1].body["messages"][-1]["content"])


def test_sigint_in_a_one_shot_run_ends_a_long_mcp_call_with_130_and_the_session_goes_on(env, dirs, project, tmp_path):
    log = tmp_path / "servers.log"
    _setup(dirs, log)
    argv = [str(BIN / "i"), "-C", str(project), "--session-name", "s", "--yolo"]
    with ScriptedModel([LONG_CALL, ECHO, {"text": "echoed"}]) as model:
        _write_config(dirs, model)
        process = subprocess.Popen(
            [*argv, "run the long tool"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            assert wait_until(lambda: len(_servers(log)) == 1, scaled(30)), "the server never started"
            (server,) = _servers(log)
            time.sleep(0.5)  # a few progress reports into the call
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            code = process.wait(timeout=scaled(30))
            took = time.monotonic() - started
        finally:
            process.kill()
        assert code == 130 and took < scaled(PROMPTLY_S)
        assert wait_until(lambda: not _running(server), scaled(PROMPTLY_S)), "the server outlived the interrupt"
        assert process.stderr is not None and "i: interrupted" in process.stderr.read().decode()
        # The checkpoint stays valid: the next run of the same session calls the server again.
        again = subprocess.run(
            [*argv, "and now echo"], env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=scaled(120)
        )
    assert again.returncode == 0, again.stderr
    assert "echoed" in again.stdout.decode()
    assert _tool_messages(model.requests[-1])[-1] == "echo: after"
    assert len(_servers(log)) == 2
    saved = loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())["messages"]
    assert saved[-1]["role"] == "assistant"
