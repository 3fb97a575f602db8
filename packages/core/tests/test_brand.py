"""The brand: one glyph as ANSI, plain ASCII and SVG; shown by the console on a TTY at start only,
never in a one-shot task, line mode or a model request."""

from __future__ import annotations

import os
import pty
import select
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest

from i_core.brand import GLYPH, TAGLINE, render_svg
from i_scripted import ScriptedModel

SVG = "{http://www.w3.org/2000/svg}"
FILLED = sum(cell != "." for row in GLYPH for cell in row)


def test_plain_ascii_has_no_escape_and_no_non_ascii_byte(run_i):
    result = run_i("--runtime", "logo", "--plain", "--ascii")
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout and all(byte < 128 for byte in result.stdout)
    assert result.stdout.count(b"#") == 2 * FILLED and TAGLINE.encode() in result.stdout


def test_the_default_is_ansi_colour_and_no_color_turns_it_off(run_i, monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    coloured = run_i("--runtime", "logo")
    assert coloured.returncode == 0 and coloured.stdout.count(b"\x1b[0m") == FILLED
    plain = run_i("--runtime", "logo", env_extra={"NO_COLOR": "1"})
    assert b"\x1b" not in plain.stdout and plain.stdout.count("\u2588".encode()) == 2 * FILLED


def test_svg_is_a_valid_svg_document_of_the_same_glyph(run_i):
    result = run_i("--runtime", "logo", "--svg")
    assert result.returncode == 0 and result.stdout.decode() == render_svg()
    root = ET.fromstring(result.stdout)
    assert root.tag == f"{SVG}svg" and root.get("viewBox") == f"0 0 {len(GLYPH[0]) * 16} {len(GLYPH) * 16}"
    assert len(root.findall(f"{SVG}rect")) == FILLED


def _config(dirs, model: ScriptedModel) -> None:
    body = {"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False}
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(body))


def _console(args: list[str], cwd: Path, lines: bytes) -> bytes:
    """Run ``i`` on a pseudo-terminal, type ``lines`` at the prompt, return everything it showed."""
    env = {**os.environ, "TERM": "dumb", "COLUMNS": "200"}
    env.pop("NO_COLOR", None)
    pid, fd = pty.fork()
    if pid == 0:
        os.chdir(cwd)
        os.execve(sys.executable, [sys.executable, "-m", "i_core", *args], env)
    output, deadline, sent = b"", time.time() + 60, False
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                output += os.read(fd, 65536)
            except OSError:
                break
        if not sent and b"> " in output:
            os.write(fd, lines)
            sent = True
        if os.waitpid(pid, os.WNOHANG)[0]:
            break
    else:
        os.kill(pid, 9)
    os.close(fd)
    return output


@pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")
def test_the_console_shows_the_logo_at_start_and_never_to_the_model(dirs, project):
    with ScriptedModel([{"text": "pong"}, {"text": "pong"}]) as model:
        _config(dirs, model)
        shown = _console(["-C", str(project)], project, b"ping\n/exit\n")
        hidden = _console(["-C", str(project), "--no-logo"], project, b"ping\n/exit\n")
    assert TAGLINE.encode() in shown and b"\x1b[38;5;39m" in shown
    assert shown.index(TAGLINE.encode()) < shown.index(b"> ")  # at start, before the first prompt
    assert TAGLINE.encode() not in hidden and b"pong" in hidden
    assert len(model.requests) == 2
    for request in model.requests:
        assert TAGLINE.encode() not in request.raw and "\u2588".encode() not in request.raw


def test_no_logo_in_a_one_shot_task_or_line_mode(run_i, dirs, project):
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        _config(dirs, model)
        task = run_i("-C", str(project), "hello")
        lines = run_i("-C", str(project), input=b"hello\n")
    for result in (task, lines):
        assert result.returncode == 0, result.stderr
        assert TAGLINE.encode() not in result.stdout + result.stderr
