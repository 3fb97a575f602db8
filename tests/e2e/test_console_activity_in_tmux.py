"""The console's tool activity and input on a real tmux pane, default options, against the scripted
model on loopback: a read and a shell call each show their line and outcome, an edit shows its diff
after it ran, ``@file`` attaches a file (Tab completes it; the request carries its content; outside
the workspace the permission rules ask), ``!ls`` asks and runs and its output goes with the next
request.

The screen is read with ``capture-pane`` and polled for, within a timeout scaled by
``I_TEST_TIME_SCALE`` (default 4), as in ``test_hostile_text_in_tmux``. Without tmux the tests skip
on a developer's machine and fail under CI (``CI=true``).
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from tmux_pane import TmuxPane, open_pane

from i_scripted import ScriptedModel

BIN = Path(sys.executable).parent


class Pane(TmuxPane):
    """One tmux server of its own (``-L``), one session, one pane running ``i``."""

    def start(self, env: dict[str, str], project: Path) -> None:
        exports = "".join(
            f"export {key}={shlex.quote(value)}\n"
            for key, value in env.items()
            if key.startswith("I_") or key in ("PATH", "HOME", "PYTHONPATH", "LANG", "LC_ALL")
        )
        script = project.parent / "run.sh"
        status = shlex.quote(str(self.status))
        script.write_text(
            f"{exports}cd {shlex.quote(str(project))}\n{shlex.quote(str(BIN / 'i'))} -C .\n"
            f"echo $? > {status}.new && mv {status}.new {status}\n"
        )
        self.tmux("new-session", "-d", "-x", "150", "-y", "50", "-s", "t", f"sh {script}")
        self.wait_text("> ")

    def exit(self) -> int:
        self.keys("/exit", "Enter")
        return self.wait_exit()


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    yield from open_pane(Pane, "i-activity", tmp_path)


def _config(dirs: dict[str, Path], model: ScriptedModel) -> None:
    # Default options: streaming on, no --quiet.
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "scripted-1"})
    )


def _after(screen: str, marker: str) -> list[str]:
    lines = screen.splitlines()
    return lines[max(i for i, line in enumerate(lines) if marker in line) + 1 :]


def test_a_read_and_a_shell_call_show_their_outcome_and_an_edit_its_diff(pane, env, dirs, project):
    (project / "notes.txt").write_text("one\ntwo\nthree\n")
    (project / "f.txt").write_text("alpha\nbeta\n")
    steps = [
        {"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "printf 'l1\\nl2\\nl3\\nl4\\nl5\\n'; exit 3"}}]},
        {"tool_calls": [{"name": "edit", "arguments": {"path": "f.txt", "old_string": "beta", "new_string": "gamma"}}]},
        {"text": "All **done**."},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        pane.start(env, project)
        pane.keys("tidy up", "Enter")
        pane.wait_text("[d]eny this session")
        pane.keys("y", "Enter")
        pane.wait_text("[d]eny this session", 2)
        pane.keys("y", "Enter")
        pane.wait_text("[i] tokens in")
        screen = pane.screen()
        assert pane.exit() == 0
    lines = screen.splitlines()
    read = lines.index("● read notes.txt")
    assert lines[read + 1] == "  ⎿ 3 lines"
    shell = next(i for i, line in enumerate(lines) if line.startswith("● shell printf"))
    ended = next(line for line in lines[shell:] if line.startswith("  ⎿ exit"))
    assert re.fullmatch(r"  ⎿ exit 3 · \d+\.\d s", ended), screen
    assert "    … +2 lines (/more shows all)" in lines[shell:]
    # The diff after the edit ran (the approval prompt showed one before it, not indented).
    after = _after(screen, "⎿ edited f.txt: replaced 1 occurrence")
    assert after[:3] == ["    --- a/f.txt", "    +++ b/f.txt", "    @@ -1,2 +1,2 @@"], screen
    assert after[3:6] == ["     alpha", "    -beta", "    +gamma"], screen
    assert "All done." in screen and "**" not in screen  # the answer rendered
    assert (project / "f.txt").read_text() == "alpha\ngamma\n"


def test_at_file_attaches_and_bang_ls_asks_and_runs(pane, env, dirs, project, plugins):
    plugins("approval")  # the permission rules' module: approval.json below
    (project / "notes.txt").write_text("the secret word is marmalade\n")
    outside = project.parent / "outside.txt"
    outside.write_text("outside content\n")
    (dirs["config"] / "approval.json").write_bytes(orjson.dumps({"read_outside_workspace": "ask"}))
    steps = [{"text": "Read it."}, {"text": "Saw the listing."}]
    with ScriptedModel(steps) as model:
        _config(dirs, model)
        pane.start(env, project)
        pane.keys("what is in @no", "Tab")
        pane.wait_text("> what is in @notes.txt")
        pane.keys(f" and @{outside}?", "Enter")
        pane.wait_text("[d]eny this session")
        assert f"[i] allow read {outside}?" in pane.screen()
        pane.keys("n", "Enter")
        pane.wait_text("[i] tokens in")
        assert f"@{outside} not attached: the user declined read" in pane.screen()
        pane.keys("!ls", "Enter")
        pane.wait_text("[i] allow shell: ls?")
        pane.keys("y", "Enter")
        pane.wait_text("[i] the output goes with your next request")
        pane.keys("and now?", "Enter")
        pane.wait_text("[i] tokens in", 2)
        screen = pane.screen()
        assert pane.exit() == 0
    assert "notes.txt" in _after(screen, "[i] allow shell: ls?")[0:3]
    first = orjson.dumps(model.requests[0].body["messages"][-1]).decode()
    assert "the secret word is marmalade" in first and "outside content" not in first
    second = model.requests[1].body["messages"][-1]["content"]
    assert "<command_output" in second[0]["text"] and "notes.txt" in second[0]["text"]
    assert second[-1]["text"] == "and now?"
