"""The console on a real pseudo-terminal with the DEFAULT options (streaming on, no --quiet).

What the user sees is checked through a small VT emulation of the bytes the terminal received:
carriage return, newline, erase-line and cursor moves are applied, so text that was erased or
overwritten is not on the "screen" at the end.
"""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

import orjson
import pytest

from i_protocol.jsonsafe import loads_safe
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z@])")


def render(raw: bytes) -> list[str]:
    """The lines a terminal shows after receiving ``raw`` (enough VT for what the console emits)."""
    lines: list[list[str]] = [[]]
    row = col = 0
    text = raw.decode("utf-8", "replace")
    index = 0
    while index < len(text):
        ch = text[index]
        if ch == "\x1b":
            found = _CSI.match(text, index)
            if found:
                params, final = found.group(1), found.group(2)
                if final == "K":
                    mode = params or "0"
                    if mode == "2":
                        lines[row] = []
                    elif mode == "0":
                        del lines[row][col:]
                elif final == "C":
                    col += int(params or 1)
                elif final == "D":
                    col = max(0, col - int(params or 1))
                elif final == "A":
                    row = max(0, row - int(params or 1))
                index += len(found.group(0))
                continue
            other = re.compile(r"\x1b\][^\x07]*\x07|\x1b.").match(text, index)
            index += len(other.group(0)) if other else 1
            continue
        if ch == "\r":
            col = 0
        elif ch == "\n":
            row += 1
            col = 0
            while len(lines) <= row:
                lines.append([])
        elif ch == "\b":
            col = max(0, col - 1)
        elif ch == "\x07" or ord(ch) < 32:
            pass
        else:
            line = lines[row]
            while len(line) < col:
                line.append(" ")
            if col < len(line):
                line[col] = ch
            else:
                line.append(ch)
            col += 1
        index += 1
    return ["".join(line).rstrip() for line in lines]


class Terminal:
    """``i`` running on a pseudo-terminal: send keys, wait for output, read the screen."""

    def __init__(self, args: list[str], cwd: Path) -> None:
        env = {**os.environ, "TERM": "dumb", "NO_COLOR": "1", "COLUMNS": "200"}
        env.pop("INSIDE_EMACS", None)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: `i` on the pseudo-terminal
            # Ctrl-C as at a terminal, even when the tests run in the background (SIGINT ignored).
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.chdir(cwd)
            os.execve(sys.executable, [sys.executable, "-m", "i_core", *args], env)
        self.output = b""
        self.status: int | None = None

    def read(self, timeout: float = 0.2) -> None:
        ready, _, _ = select.select([self.fd], [], [], timeout)
        if ready:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                chunk = b""
            self.output += chunk

    def wait_for(self, marker: str | bytes, timeout: float = 30, since: int = 0) -> None:
        data = marker.encode() if isinstance(marker, str) else marker
        deadline = time.time() + scaled(timeout)
        while data not in self.output[since:] and time.time() < deadline:
            self.read()
        assert data in self.output[since:], f"{marker!r} not seen; screen:\n" + "\n".join(self.screen())

    def send(self, data: bytes) -> None:
        os.write(self.fd, data)

    def interrupt_at_prompt(self) -> None:
        """Ctrl-C once readline waits for a key. (CPython's readline loop misses a SIGINT that lands
        in the microseconds between drawing the prompt and its select(); no person is that fast.)"""
        time.sleep(0.3)
        self.send(b"\x03")

    def screen(self) -> list[str]:
        return render(self.output)

    def wait_exit(self, timeout: float = 30) -> int:
        deadline = time.time() + scaled(timeout)
        while time.time() < deadline:
            self.read(0.1)
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                for _ in range(20):
                    self.read(0.05)
                os.close(self.fd)
                self.status = os.waitstatus_to_exitcode(status)
                return self.status
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        raise AssertionError("i did not exit; screen:\n" + "\n".join(self.screen()))


def _config(dirs: dict[str, Path], model: ScriptedModel) -> None:
    # Default options: no "stream" field (streaming is on by default), no --quiet anywhere.
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m"})
    )


ONE_LINE = "Hello there, this answer is one line long."
MANY_LINES = "First line of the answer.\nSecond line, a bit longer than the first.\nThe third and last line."


def test_render_applies_erase_and_carriage_return():
    assert render(b"[i] model thinking\xe2\x80\xa6\r\x1b[2KHello\nworld") == ["Hello", "world"]
    assert render(b"abc\r\x1b[2K") == [""]


@pytest.mark.parametrize("answer", [ONE_LINE, MANY_LINES], ids=["one-line", "many-lines"])
def test_one_shot_streamed_answer_stays_on_screen(dirs, project, answer):
    with ScriptedModel([{"text": answer}]) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project), "say it"], project)
        assert term.wait_exit() == 0
    screen = term.screen()
    expected = answer.split("\n")
    start = screen.index(expected[0])  # its own line: not glued to a progress line
    assert screen[start : start + len(expected)] == expected
    assert any(line.startswith("[i] 1 model request(s)") for line in screen[start + len(expected) :])
    assert model.requests[0].body["stream"] is True
    assert not any("model thinking" in line for line in screen)


def test_console_streamed_answers_stay_on_screen_with_a_status_line(dirs, project):
    with ScriptedModel([{"text": ONE_LINE}, {"text": MANY_LINES}]) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project)], project)
        term.wait_for("> ")
        term.send(b"first\n")
        term.wait_for("[i] tokens in")
        mark = len(term.output)
        term.send(b"second\n")
        term.wait_for("[i] tokens in", since=mark)
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/exit\n")
        assert term.wait_exit() == 0
    screen = term.screen()
    one = screen.index(ONE_LINE)
    assert screen[one - 1].endswith("> first")
    assert screen[one + 1].startswith("[i] tokens in ")
    many = screen.index(MANY_LINES.split("\n")[0])
    assert screen[many : many + 3] == MANY_LINES.split("\n")
    status = screen[many + 3]
    assert re.fullmatch(
        r"\[i\] tokens in [\d,]+ / out \d+ \(cache read 0%\) · context unknown \(no budget module\)"
        r" · 0 compactions",
        status,
    ), status


def _session_files(project: Path) -> list[Path]:
    return sorted((project / ".i" / "sessions").glob("*.json"))


def test_ctrl_c_during_a_slow_reply_returns_to_the_prompt_with_nothing_saved(dirs, project):
    # The reply would come after the test's own waits: back at the prompt means it was not awaited.
    with ScriptedModel([{"text": "too slow to wait for", "delay": 3600}, {"text": "next"}]) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project), "--session-name", "s"], project)
        term.wait_for("> ")
        term.send(b"a slow question\n")
        deadline = time.time() + scaled(10)
        while not model.requests and time.time() < deadline:
            term.read(0.05)
        assert model.requests, "the request was never sent"
        term.send(b"\x03")
        term.wait_for("[i] cancelled")
        mark = term.output.index(b"[i] cancelled")
        term.wait_for("> a slow question", since=mark)  # the cancelled input, ready to edit
        assert not (project / ".i" / "sessions" / "s.json").exists()  # nothing saved
        term.interrupt_at_prompt()  # a second Ctrl-C exits
        assert term.wait_exit() == 0
    assert len(model.requests) == 1
    assert "too slow to wait for" not in "\n".join(term.screen())


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="needs /proc to find the tool's process")
def test_ctrl_c_during_a_running_shell_tool_kills_it_and_returns_to_the_prompt(dirs, project):
    marker = f"sleep 3{os.getpid() % 10}.{time.time_ns() % 1000}"
    steps = [{"tool_calls": [{"name": "shell", "arguments": {"command": marker}}]}, {"text": "after"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project), "--session-name", "s", "--yolo"], project)
        term.wait_for("> ")
        term.send(b"run it\n")
        deadline = time.time() + scaled(15)
        while not _sleepers(marker) and time.time() < deadline:
            term.read(0.05)
        assert _sleepers(marker), "the shell tool never started"
        term.send(b"\x03")
        term.wait_for("[i] cancelled")
        term.wait_for("> run it", since=term.output.index(b"[i] cancelled"))
        deadline = time.time() + scaled(5)
        while _sleepers(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert not _sleepers(marker), "the tool's process group outlived the cancel"
        assert not (project / ".i" / "sessions" / "s.json").exists()
        term.interrupt_at_prompt()
        assert term.wait_exit() == 0
    assert len(model.requests) == 1


def test_one_shot_ctrl_c_exits_130_and_keeps_the_last_checkpoint(dirs, project):
    steps = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
        {"text": "never finished", "delay": 5},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project), "--session-name", "s", "read it"], project)
        deadline = time.time() + scaled(15)
        while len(model.requests) < 2 and time.time() < deadline:
            term.read(0.05)
        term.send(b"\x03")
        assert term.wait_exit() == 130
    assert "i: interrupted" in "\n".join(term.screen())
    saved = loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())["messages"]
    assert [m["role"] for m in saved] == ["system", "user", "assistant", "tool"]  # the tool batch's checkpoint


def test_edit_shows_a_diff_and_a_allows_the_tool_for_the_session(dirs, project):
    (project / "notes.txt").write_text("alpha\nbeta\ngamma\n")
    steps = [
        {
            "tool_calls": [
                {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "beta", "new_string": "BETA"}}
            ]
        },
        {
            "tool_calls": [
                {"name": "edit", "arguments": {"path": "notes.txt", "old_string": "gamma", "new_string": "GAMMA"}}
            ]
        },
        {"text": "both edits done"},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project)], project)
        term.wait_for("> ")
        term.send(b"edit twice\n")
        term.wait_for("[d]eny this session: ")
        screen = term.screen()
        assert "--- a/notes.txt" in screen and "+++ b/notes.txt" in screen
        assert "-beta" in screen and "+BETA" in screen and " alpha" in screen
        term.send(b"a\n")
        term.wait_for("both edits done")
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/exit\n")
        assert term.wait_exit() == 0
    assert (project / "notes.txt").read_text() == "alpha\nBETA\nGAMMA\n"
    assert term.output.count(b"[d]eny this session") == 1  # the second edit was not asked about


def test_a_line_typed_while_a_slow_reply_streams_is_the_next_user_message(dirs, project):
    steps = [{"text": "a slow answer", "delay": 3}, {"text": "got: {{last_user_message}}"}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project), "--session-name", "s"], project)
        term.wait_for("> ")
        term.send(b"first\n")
        deadline = time.time() + scaled(10)
        while not model.requests and time.time() < deadline:
            term.read(0.05)
        term.send(b"and also this\n")
        term.wait_for("[i] queued for the next request: and also this")
        term.wait_for("got: and also this")
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/exit\n")
        assert term.wait_exit() == 0
    assert len(model.requests) == 2
    wire = model.requests[1].body["messages"]
    assert wire[-1] == {"role": "user", "content": "and also this"}  # the private id stays off the wire
    assert [m["role"] for m in wire[-3:]] == ["user", "assistant", "user"]
    session = project / ".i" / "sessions" / "s.json"
    saved = loads_safe(session.read_bytes())["messages"]
    queued = [m for m in saved if "_steering" in m]
    assert [m["content"] for m in queued] == ["and also this"]
    ack = session.with_name("s.queue.jsonl.ack").read_text().split()
    assert ack == [queued[0]["_steering"]]


def test_the_status_line_counts_the_context_by_the_server_s_usage_when_it_has_one():
    from i_core.screen import context_used

    budget = {"estimate": 8780, "context_window": 8000}  # the unanchored estimate of a first request
    assert context_used({"input_tokens": 3089, "output_tokens": 13}, budget) == 3102
    assert context_used({}, budget) == 8780  # no usage reported: the estimate is all there is
    assert context_used({"input_tokens": 3089}, {}) is None


def test_always_for_a_shell_command_allows_its_prefix_and_saves_it_outside_the_project(dirs, project):
    steps = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo first"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo first again"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo other"}}]},
        {"text": "all echoed"},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project)], project)
        term.wait_for("> ")
        term.send(b"echo things\n")
        term.wait_for("[d]eny this session: ")
        term.send(b"a\n")
        term.wait_for("also save for this workspace? [y/N]: ")
        assert "allowed for this session: shell(echo first:*)" in "\n".join(term.screen())
        mark = len(term.output)
        term.send(b"y\n")
        term.wait_for("[d]eny this session: ", since=mark)  # `echo other` is asked about
        term.send(b"n\n")
        term.wait_for("all echoed")
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/exit\n")
        assert term.wait_exit() == 0
    assert term.output.count(b"[d]eny this session: ") == 2  # `echo first again` ran unasked
    saved = list((dirs["data"] / "workspaces").glob("*/approval.json"))
    assert len(saved) == 1 and orjson.loads(saved[0].read_bytes()) == {"allow": ["shell(echo first:*)"]}
    assert not list(project.rglob("approval.json"))
    results = [m["content"] for m in model.requests[3].body["messages"] if m.get("role") == "tool"]
    assert "first again" in results[1] and "declined" in results[2]


def test_plan_then_act_in_the_console(dirs, project):
    steps = [
        {"tool_calls": [{"name": "write", "arguments": {"path": "plan.txt", "content": "x"}}]},
        {"text": "Plan: write plan.txt."},
        {"tool_calls": [{"name": "write", "arguments": {"path": "plan.txt", "content": "x"}}]},
        {"text": "Written."},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        term = Terminal(["-C", str(project)], project)
        term.wait_for("> ")
        term.send(b"/plan\n")
        term.wait_for("plan mode: read and search only")
        term.send(b"make plan.txt\n")
        term.wait_for("Plan: write plan.txt.")
        assert not (project / "plan.txt").exists()
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/act\n")
        term.wait_for("normal mode")
        mark = len(term.output)
        term.send(b"go ahead\n")
        term.wait_for("[d]eny this session: ", since=mark)
        term.send(b"y\n")
        term.wait_for("Written.")
        term.wait_for("> ", since=len(term.output) - 200)
        term.send(b"/exit\n")
        assert term.wait_exit() == 0
    assert (project / "plan.txt").read_text() == "x"
    refused = [m["content"] for m in model.requests[1].body["messages"] if m.get("role") == "tool"]
    assert "plan mode" in refused[0]
    users = [m["content"] for m in model.requests[2].body["messages"] if m.get("role") == "user"]
    assert "[plan mode:" in str(users[0]) and "[plan mode is over" in str(users[1])
