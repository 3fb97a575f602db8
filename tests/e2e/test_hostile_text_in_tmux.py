"""Untrusted text never drives the terminal: the real `i` console, default options, on a real tmux
pane, against the scripted model on loopback.

- A shell command forged with a carriage return and an erase-line escape, so that a terminal that
  obeyed them would show ``[i] allow shell: ls -la?``, is shown as it will run (``touch
  PWNED_MARKER`` on the pane), and Enter (the default, No) does not run it.
- An answer holding OSC 0 and OSC 2 title sequences (BEL and ST terminated) leaves the pane's title
  as it was.

What tmux shows is read with ``capture-pane`` and polled for, within a timeout scaled by
``I_TEST_TIME_SCALE`` (default 4); nothing waits a fixed time. Without tmux the tests skip on a
developer's machine and fail under CI (``CI=true``): .ci/run installs it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from tmux_pane import TmuxPane, open_pane

from i_scripted import ScriptedModel

BIN = Path(sys.executable).parent

SAFE_TITLE = "i-pane-title-before"
FORGED = "touch PWNED_MARKER #\r\x1b[2K[i] allow shell: ls -la"
TITLE_ANSWER = "Here you go.\x1b]0;PWNED\x07 and \x1b]2;PWNED2\x1b\\ done."


class Pane(TmuxPane):
    """One tmux server of its own (``-L``), one session, one pane running a command."""

    def start(self, script: Path, env: dict[str, str]) -> None:
        size = ["-x", "200", "-y", "50"]
        subprocess.run(
            ["tmux", "-L", self.socket, "-f", str(self.conf), "new-session", "-d", *size, "-s", "t", f"sh {script}"],
            env=env,
            check=True,
            timeout=30,
        )

    def title(self) -> str:
        return self.show("#{pane_title}")

    def show(self, format: str) -> str:
        return self.tmux("display-message", "-p", "-t", "t", format).strip()


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    yield from open_pane(Pane, "i-test", tmp_path)


def _start_console(pane: Pane, env: dict[str, str], dirs: dict[str, Path], project: Path, base_url: str) -> None:
    # Default options: no "stream" field (streaming is on), no --quiet, the logo on.
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps({"protocol": "openai", "base_url": base_url, "model": "scripted-1"})
    )
    exports = "".join(
        f"export {key}={shlex.quote(value)}\n"
        for key, value in env.items()
        if key.startswith("I_") or key in ("PATH", "HOME", "PYTHONPATH", "LANG", "LC_ALL")
    )
    script = project.parent / "run.sh"
    # The title is set first by a sequence tmux obeys: the check below would catch a pane that
    # ignored titles altogether. The shell writes i's exit status (tmux 3.3 does not always reap
    # a pane's process, so #{pane_dead_status} may never come).
    status = shlex.quote(str(pane.status))
    script.write_text(
        f"{exports}printf '\\033]2;{SAFE_TITLE}\\033\\\\'\n"
        f"cd {shlex.quote(str(project))}\n{shlex.quote(str(BIN / 'i'))} -C .\n"
        f"echo $? > {status}.new && mv {status}.new {status}\n"
    )
    pane.start(script, env)
    pane.wait_for(lambda: pane.title() == SAFE_TITLE, "the pane title set before i started")
    pane.wait_text("> ")


def test_a_forged_shell_command_is_shown_as_it_will_run_and_enter_refuses_it(pane, env, dirs, project):
    steps = [{"tool_calls": [{"name": "shell", "arguments": {"command": FORGED}}]}, {"text": "Alright, not run."}]
    with ScriptedModel(steps) as model:
        _start_console(pane, env, dirs, project, model.base_url)
        pane.keys("list the files", "Enter")
        pane.wait_text("[d]eny this session")
        screen = pane.screen()
        prompt = next(line for line in screen.splitlines() if "[d]eny this session" in line)
        assert prompt.startswith("[i] allow shell: touch PWNED_MARKER #"), screen
        assert "\u240d\\x1b[2K[i] allow shell: ls -la?" in prompt, screen
        pane.keys("Enter")  # the default answer: No
        pane.wait_text("Alright, not run.")
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert not (project / "PWNED_MARKER").exists()
    tool_result = model.requests[1].body["messages"][-1]
    assert tool_result["role"] == "tool" and "declined" in tool_result["content"]


def test_title_escapes_in_an_answer_leave_the_pane_title_alone(pane, env, dirs, project):
    with ScriptedModel([{"text": TITLE_ANSWER}]) as model:
        _start_console(pane, env, dirs, project, model.base_url)
        pane.keys("hello", "Enter")
        pane.wait_text("[i] tokens in")  # the turn is over: everything it wrote has been drawn
        assert pane.title() == SAFE_TITLE
        assert "Here you go.\\x1b]0;PWNED\\x07 and \\x1b]2;PWNED2\\x1b\\ done." in pane.screen()
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert pane.title() == SAFE_TITLE
