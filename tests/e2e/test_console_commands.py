"""The console's slash commands and multi-line input: the real `i` console, default options, on a
real tmux pane, against the scripted model on loopback (what tmux shows is read with
``capture-pane`` and polled for, as ``test_hostile_text_in_tmux`` does).

- ``/help`` lists the commands (a project's custom command too); ``/exti`` is refused with a
  suggestion and never sent; ``//`` sends a literal slash; a custom command sends its text.
- ``/model NAME`` switches: the next request goes to the new model; a protocol whose module the
  profile lacks is refused in one line; ``/status`` shows the cost config.json's prices give.
- ``/compact FOCUS`` reaches i-worker-compact (its summary request asks for the focus), and a
  third-party compactor that ignores it is said to.
- A bracketed paste of several lines, a trailing backslash and Alt-Enter each make one request.
"""

from __future__ import annotations

import shlex
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from test_hostile_text_in_tmux import BIN, Pane
from tmux_pane import open_pane

from i_scripted import ScriptedModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LONG_ANSWER = " ".join(f"Step {n}: the parser reads token {n} and checks its grammar rule." for n in range(80))
"""A first answer long enough that a summary of it is smaller than it (a compaction must reduce)."""


@pytest.fixture
def pane(tmp_path: Path) -> Iterator[Pane]:
    yield from open_pane(Pane, "i-cmd", tmp_path)


def _start(pane: Pane, env: dict[str, str], dirs: dict[str, Path], project: Path, config: dict[str, Any]) -> None:
    """``i -C .`` on the pane with ``config`` as config.json (default options otherwise)."""
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
    exports = "".join(
        f"export {key}={shlex.quote(value)}\n"
        for key, value in env.items()
        if key.startswith("I_") or key in ("PATH", "HOME", "PYTHONPATH", "LANG", "LC_ALL")
    )
    script = project.parent / "run.sh"
    status = shlex.quote(str(pane.status))
    script.write_text(
        f'{exports}export PATH={shlex.quote(str(BIN))}:"$PATH"\ncd {shlex.quote(str(project))}\n'
        f"{shlex.quote(str(BIN / 'i'))} -C .\necho $? > {status}.new && mv {status}.new {status}\n"
    )
    pane.start(script, env)
    pane.wait_text("/help lists the commands")
    pane.wait_for(lambda: pane.screen().rstrip().endswith(">"), "the prompt")


def _turns(pane: Pane, count: int) -> None:
    """Wait until ``count`` turns have ended (each ends with its status line)."""
    pane.wait_for(lambda: pane.screen().count("[i] tokens in") >= count, f"{count} finished turn(s)")


def _user_text(request: Any) -> str:
    content = [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def _config(base_url: str, **extra: Any) -> dict[str, Any]:
    return {"protocol": "openai", "base_url": base_url, "model": "scripted-1", **extra}


def test_help_lists_the_commands_and_an_unknown_one_is_refused_and_never_sent(pane, env, dirs, project):
    (project / ".i" / "commands").mkdir(parents=True)
    (project / ".i" / "commands" / "review.md").write_text(
        "---\ndescription: Review a file\n---\nReview $ARGUMENTS now.\n"
    )
    steps = [{"text": "first answer"}, {"text": "second answer"}, {"text": "third answer"}]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url))
        pane.keys("/help", "Enter")
        pane.wait_text("/review")
        screen = pane.screen()
        for usage in ("/help", "/exit", "/compact [FOCUS]", "/model [NAME [PROTOCOL]]", "/status", "/sessions"):
            assert f"  {usage}" in screen, screen
        assert "/resume [NAME|N]" in screen and "/new" in screen and "Review a file" in screen
        pane.keys("/exti", "Enter")
        pane.wait_text("i: unknown command /exti; did you mean /exit?")
        assert not pane.status.exists()  # still running: /exti is not /exit
        pane.keys("//usr/lib/x is broken", "Enter")
        _turns(pane, 1)
        pane.keys("/review app.py", "Enter")
        _turns(pane, 2)
        pane.keys("/usr/share is where?", "Enter")
        _turns(pane, 3)
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert [_user_text(r) for r in model.requests] == [
        "/usr/lib/x is broken",
        "Review app.py now.",
        "/usr/share is where?",
    ]
    assert not any(b"exti" in r.raw for r in model.requests)


def test_model_switches_for_the_next_request_and_status_shows_the_cost(pane, env, dirs, project):
    steps = [{"text": "small answer"}, {"text": "big answer"}]
    config = _config(
        "",
        budget={"context_window": 20000},
        prices={"input_per_mtok": 2, "output_per_mtok": 8},
        models={"big": {"model": "scripted-big", "budget": {"context_window": 60000}}},
    )
    with ScriptedModel(steps) as model:
        config["base_url"] = model.base_url
        _start(pane, env, dirs, project, config)
        pane.keys("hello", "Enter")
        _turns(pane, 1)
        pane.keys("/model other responses", "Enter")
        pane.wait_text("i: /model: protocol \"responses\" needs the 'responses' module")
        pane.keys("/model big", "Enter")
        pane.wait_text("[i] now model scripted-big (protocol openai")
        assert "window 60,000 tokens" in pane.screen()
        pane.keys("and now?", "Enter")
        _turns(pane, 2)
        pane.keys("/status", "Enter")
        pane.wait_text("compaction(s) of")
        screen = pane.screen()
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert [r.body["model"] for r in model.requests] == ["scripted-1", "scripted-big"]
    assert _user_text(model.requests[1]) == "and now?"
    assert "this console: 2 model request(s)" in screen
    # The second request's model has no prices of its own: only the first is counted.
    assert "cost 0.00" in screen and "USD (not counting 1 request(s) without prices or usage)" in screen


def _two_turns_then_compact(pane: Pane, focus: str) -> str:
    pane.keys("first request about the parser", "Enter")
    _turns(pane, 1)
    pane.keys("second request about the lexer", "Enter")
    _turns(pane, 2)
    pane.keys(f"/compact {focus}", "Enter")
    pane.wait_for(lambda: "compacted:" in pane.screen() or "compaction failed" in pane.screen(), "/compact's outcome")
    time.sleep(0.5)  # the line after the outcome, if any, is drawn in the same write burst
    screen = pane.screen()
    pane.keys("/exit", "Enter")
    assert pane.wait_exit() == 0
    return screen


def test_compact_focus_reaches_the_compactor_s_summary_request(pane, env, dirs, project, plugins):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 1, "cache": False}))
    spare = [{"text": "Summary: the user works on the parser; keep its failing tests in view."}] * 3
    steps = [{"text": LONG_ANSWER}, {"text": "lexer answer"}, *spare]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url, budget={"context_window": 50000}))
        screen = _two_turns_then_compact(pane, "the parser's failing tests")
    assert "compacted:" in screen, screen
    assert "ignored the focus" not in screen
    summary_request = orjson.dumps(model.requests[2].body["messages"]).decode()
    assert "The user asked this summary to focus on: the parser's failing tests" in summary_request


def test_a_compactor_that_ignores_the_focus_is_said_to(pane, env, dirs, project, plugins):
    plugins("compact")
    compactor = EXAMPLES / "stdlib_compactor" / "compactor.py"
    (dirs["config"] / "bindings.json").write_bytes(
        orjson.dumps({"compact": {"exec": [sys.executable, str(compactor)]}})
    )
    steps = [{"text": LONG_ANSWER}, {"text": "lexer answer"}]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url, budget={"context_window": 50000}))
        screen = _two_turns_then_compact(pane, "the parser")
    assert "compacted:" in screen, screen
    assert "[i] the compactor ignored the focus" in screen
    assert len(model.requests) == 2  # a local summary: no summary request


def test_a_paste_a_trailing_backslash_and_alt_enter_each_make_one_request(pane, env, dirs, project):
    steps = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url))
        paste = project.parent / "paste.txt"
        paste.write_text("pasted line one\npasted line two\npasted line three")
        pane.tmux("load-buffer", str(paste))
        pane.tmux("paste-buffer", "-p", "-t", "t")  # bracketed, as a terminal pastes
        pane.wait_text("pasted line three")
        pane.keys("Enter")
        _turns(pane, 1)
        pane.keys("first half \\", "Enter")
        pane.wait_text("… ")
        pane.keys("second half", "Enter")
        _turns(pane, 2)
        pane.keys("above", "M-Enter", "below", "Enter")
        _turns(pane, 3)
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert [_user_text(r) for r in model.requests] == [
        "pasted line one\npasted line two\npasted line three",
        "first half \nsecond half",
        "above\nbelow",
    ]


def test_new_starts_a_session_and_the_resume_picker_continues_the_first(pane, env, dirs, project):
    steps = [{"text": "answer in the first"}, {"text": "answer in the second"}, {"text": "answer after resuming"}]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url))
        pane.keys("remember the word apricot", "Enter")
        _turns(pane, 1)
        pane.keys("/new", "Enter")
        pane.wait_text("[i] new session: ")
        pane.keys("a fresh start", "Enter")
        _turns(pane, 2)
        pane.keys("/resume", "Enter")
        pane.wait_text("resume which? number or name (Enter cancels): ")
        screen = pane.screen()
        pane.keys("2", "Enter")
        pane.wait_text("[i] continuing: ")
        pane.keys("which word?", "Enter")
        _turns(pane, 3)
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert "*  1  " in screen and "a fresh start" in screen and "remember the word apricot" in screen
    users = [[m["content"] for m in r.body["messages"] if m["role"] == "user"] for r in model.requests]
    assert users[1] == ["a fresh start"]
    assert users[2] == ["remember the word apricot", "which word?"]


def test_a_smaller_window_compacts_before_the_next_request(pane, env, dirs, project, plugins):
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"mode": "local", "keep_recent": 1}))
    steps = [{"text": LONG_ANSWER}, {"text": "short answer"}, {"text": "answer in the small window"}]
    small = {"model": "scripted-1", "max_tokens": 256, "budget": {"context_window": 3000}}
    config = _config("", budget={"context_window": 50000}, models={"small-window": small})
    with ScriptedModel(steps) as model:
        config["base_url"] = model.base_url
        _start(pane, env, dirs, project, config)
        pane.keys("explain the parser", "Enter")
        _turns(pane, 1)
        pane.keys("and briefly?", "Enter")
        _turns(pane, 2)
        pane.keys("/model small-window", "Enter")
        pane.wait_text("the next request compacts first")
        pane.keys("go on", "Enter")
        _turns(pane, 3)
        screen = pane.screen()
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert "window 3,000 tokens" in screen and "· 1 compaction" in screen
    assert len(model.requests) == 3  # a local summary: no summary request
    last = model.requests[2].body
    assert last["max_completion_tokens"] == 256 or last.get("max_tokens") == 256
    sent = orjson.dumps(last["messages"]).decode()
    assert "<continuation_summary>" in sent and "Step 79: the parser" not in sent


def test_mid_turn_a_path_is_queued_as_text_and_a_command_waits_for_the_prompt(pane, env, dirs, project):
    steps = [{"text": "a slow answer", "delay": 3}, {"text": "got: {{last_user_message}}"}]
    with ScriptedModel(steps) as model:
        _start(pane, env, dirs, project, _config(model.base_url))
        pane.keys("first", "Enter")
        pane.wait_for(lambda: bool(model.requests), "the first request")
        pane.keys("/usr/lib/x is broken", "Enter")
        pane.wait_text("[i] queued for the next request: /usr/lib/x is broken")
        pane.keys("/status", "Enter")
        pane.wait_text("got: /usr/lib/x is broken")
        pane.wait_text("[i] this console: 2 model request(s)")
        pane.keys("/exit", "Enter")
        assert pane.wait_exit() == 0
    assert _user_text(model.requests[1]) == "/usr/lib/x is broken"
