"""Tool activity on stderr (``i_core.activity``): a line when a call starts and when it ends, results
folded with ``/more``, bounded coloured diffs after writes and edits, every outside part through the
terminal sanitiser; plain lines on a stderr that is not a terminal, nothing with ``--quiet``."""

from __future__ import annotations

import io
import re
from pathlib import Path

import orjson

from i_core.activity import FOLD_LINES, MAX_DIFF_LINES, Activity, key_argument, outcome
from i_core.screen import Screen
from i_core.tools import ToolContext, prepare
from i_scripted import ScriptedModel

HOSTILE = "top\x1b[2J\x1b]0;PWNED\x07\rover\x9b31m"
_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _screen(*, tty: bool = True) -> tuple[Screen, io.StringIO]:
    err = TTY() if tty else io.StringIO()
    return Screen(TTY(), err, progress=True), err


def _call(activity: Activity, name: str, arguments: dict[str, object], output: str, *, error: bool = False) -> None:
    activity.event("tool_call", {"id": "c1", "name": name, "arguments": orjson.dumps(arguments).decode()})
    activity.event("approval", {"id": "c1", "name": name, "decision": "allow"})
    activity.event("tool_result", {"id": "c1", "name": name, "output": output, "is_error": error, "images": 0})


def _plain(text: str) -> str:
    return _ESCAPE.sub("", text)


def test_a_read_shows_its_line_and_how_many_lines_it_read(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    screen, err = _screen()
    _call(Activity(screen), "read", {"path": "notes.txt"}, "     1\tone\n     2\ttwo\n     3\tthree")
    shown = _plain(err.getvalue()).splitlines()
    assert shown == ["● read notes.txt", "  ⎿ 3 lines"]
    assert "\x1b[" in err.getvalue()  # a terminal without NO_COLOR: coloured


def test_a_shell_call_shows_its_exit_code_and_time_and_folds_its_output(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    screen, err = _screen()
    activity = Activity(screen)
    output = "".join(f"line {n}\n" for n in range(1, 11)) + "[exit code 3]"
    _call(activity, "shell", {"command": "make test"}, output)
    shown = err.getvalue().splitlines()
    assert shown[0] == "● shell make test"
    assert re.fullmatch(r"  ⎿ exit 3 · \d+\.\d s", shown[1])
    assert shown[2 : 2 + FOLD_LINES] == [f"    line {n}" for n in range(1, FOLD_LINES + 1)]
    assert shown[-1] == f"    … +{10 - FOLD_LINES} lines (/more shows all)"
    assert "\x1b" not in err.getvalue()  # NO_COLOR: no escape at all
    more = activity.more()
    assert more.splitlines()[0] == "[i] shell make test:"
    assert "line 10" in more and "[exit code 3]" not in more


def test_more_counts_back_from_the_newest_and_says_what_is_wrong():
    screen, _err = _screen()
    activity = Activity(screen)
    assert activity.more() == "[i] no folded result to show"
    for name in ("first", "second"):
        _call(activity, "search", {"pattern": name}, "\n".join(f"{name} {n}" for n in range(8)))
    assert "second 7" in activity.more()
    assert "first 7" in activity.more("2")
    assert activity.more("3") == "[i] /more 3: there are 2 folded result(s)"
    assert "not 'x'" in activity.more("x")


def test_escape_sequences_in_arguments_output_and_errors_never_reach_the_screen_raw(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    screen, err = _screen()
    activity = Activity(screen)
    _call(activity, "shell", {"command": "echo " + HOSTILE}, HOSTILE + "\n" + HOSTILE + "\n[exit code 0]")
    _call(activity, "mcp__x__y", {"q": HOSTILE}, "error: " + HOSTILE, error=True)
    raw = err.getvalue()
    for sequence in ("\x1b[2J", "\x1b]0;", "\x07", "\r", "\x9b"):
        assert sequence not in raw
    assert "\\x1b[2J" in raw and "\u240d" in raw and "\\x9b31m" in raw
    assert "failed: error: top\\x1b[2J" in _plain(raw)


def test_an_edit_shows_a_coloured_diff_taken_before_it_ran(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    (tmp_path / "f.txt").write_text("alpha\nbeta\n")
    arguments = {"path": "f.txt", "old_string": "beta", "new_string": "gamma\x1b]52;c;cHduZWQ=\x07"}
    prepared = prepare("edit", arguments, ToolContext(workspace=tmp_path))
    screen, err = _screen()
    activity = Activity(screen)
    activity.event("tool_call", {"id": "e", "name": "edit", "arguments": orjson.dumps(arguments).decode()})
    activity.event("approval", {"id": "e", "name": "edit", "decision": "allow", "_prepared": prepared})
    (tmp_path / "f.txt").write_text("alpha\ngamma\n")  # the edit ran: the diff was taken before
    activity.event("tool_result", {"id": "e", "name": "edit", "output": "edited f.txt: replaced 1 occurrence"})
    raw = err.getvalue()
    assert "\x1b]52" not in raw and "\x07" not in raw
    assert "\x1b[31m-beta\x1b[0m" in raw
    assert "\x1b[32m+gamma\\x1b]52;c;cHduZWQ=\\x07\x1b[0m" in raw
    assert _plain(raw).splitlines()[1] == "  ⎿ edited f.txt: replaced 1 occurrence"


def test_a_diff_is_bounded(tmp_path: Path, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    content = "".join(f"new line {n}\n" for n in range(300))
    arguments = {"path": "big.txt", "content": content}
    prepared = prepare("write", arguments, ToolContext(workspace=tmp_path))
    screen, err = _screen()
    activity = Activity(screen)
    activity.event("tool_call", {"id": "w", "name": "write", "arguments": orjson.dumps(arguments).decode()})
    activity.event("approval", {"id": "w", "name": "write", "decision": "allow", "_prepared": prepared})
    activity.event("tool_result", {"id": "w", "name": "write", "output": "created big.txt (4090 bytes)"})
    shown = err.getvalue().splitlines()
    assert shown[1] == "  ⎿ created big.txt (4090 bytes)"
    diff = shown[2:]
    assert len(diff) == MAX_DIFF_LINES + 1
    assert diff[-1] == f"    … {303 - MAX_DIFF_LINES} more lines"


def test_a_failed_write_shows_no_diff(tmp_path: Path):
    arguments = {"path": "f.txt", "content": "x\n"}
    prepared = prepare("write", arguments, ToolContext(workspace=tmp_path))
    screen, err = _screen()
    activity = Activity(screen)
    activity.event("tool_call", {"id": "w", "name": "write", "arguments": orjson.dumps(arguments).decode()})
    activity.event("approval", {"id": "w", "name": "write", "decision": "allow", "_prepared": prepared})
    activity.event(
        "tool_result", {"id": "w", "name": "write", "output": "error: write: f.txt changed", "is_error": True}
    )
    assert "+x" not in err.getvalue()
    assert "failed: error: write: f.txt changed" in err.getvalue()


def test_a_stderr_that_is_not_a_terminal_gets_one_plain_line_per_call(tmp_path: Path):
    arguments = {"path": "f.txt", "content": "x\n"}
    prepared = prepare("write", arguments, ToolContext(workspace=tmp_path))
    screen, err = _screen(tty=False)
    activity = Activity(screen)
    activity.event("tool_call", {"id": "w", "name": "write", "arguments": orjson.dumps(arguments).decode()})
    activity.event("approval", {"id": "w", "name": "write", "decision": "allow", "_prepared": prepared})
    activity.event("tool_result", {"id": "w", "name": "write", "output": "created f.txt (2 bytes)"})
    _call(activity, "shell", {"command": "ls"}, "a\nb\nc\nd\n" + HOSTILE + "\n[exit code 0]")
    lines = err.getvalue().splitlines()
    assert lines[0] == "[i] write f.txt: created f.txt (2 bytes)"
    assert re.fullmatch(r"\[i\] shell ls: exit 0 · \d+\.\d s", lines[1])
    assert len(lines) == 2 and "\x1b" not in err.getvalue()


def test_key_argument_and_outcome_read_each_tool():
    assert key_argument("shell", '{"command": "git\\n  status"}') == "git status"
    assert key_argument("glob", '{"pattern": "**/*.py"}') == "**/*.py"
    assert key_argument("mcp__git__log", '{"n": 3}') == '{"n":3}'
    assert key_argument("read", "not json\x1b[2J") == "not json\\x1b[2J"
    assert len(key_argument("shell", orjson.dumps({"command": "x" * 500}).decode())) == 100
    assert outcome("shell", "[killed by signal 9]", False, 1.25) == "killed by signal 9 · 1.2 s"
    assert outcome("read", "notes.txt: (empty file)", False, 0) == "0 lines"


def _tool_run(dirs: dict[str, Path], project: Path, run_i, *args: str):
    (project / "notes.txt").write_text("one\ntwo\n")
    steps = [{"tool_calls": [{"name": "read", "arguments": {"path": "notes.txt"}}]}, {"text": "done"}]
    with ScriptedModel(steps) as model:
        config = {"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        return run_i("-C", str(project), *args, "read the notes")


def test_a_one_shot_run_without_a_terminal_says_each_call_in_one_plain_line(dirs, project, run_i):
    result = _tool_run(dirs, project, run_i)
    assert result.returncode == 0, result.stderr
    assert "[i] read notes.txt: 2 lines" in result.stderr.decode().splitlines()
    assert b"\x1b" not in result.stderr and result.stdout == b"done\n"


def test_quiet_shows_no_tool_activity(dirs, project, run_i):
    result = _tool_run(dirs, project, run_i, "--quiet")
    assert result.returncode == 0, result.stderr
    assert b"notes.txt" not in result.stderr
