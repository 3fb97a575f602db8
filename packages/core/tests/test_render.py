"""Markdown answers on a terminal (``i_core.render``): rendered block by block with rich, outside text
sanitised first, rich's markup off, links shown with their address; piped answers stay raw."""

from __future__ import annotations

import io
import re

import orjson

from i_core.render import MarkdownRenderer, complete_blocks, render_markdown
from i_core.screen import Screen
from i_scripted import ScriptedModel


class TTY(io.StringIO):
    def isatty(self) -> bool:
        return True


def _rendered(chunks: list[str], *, color: bool = True) -> str:
    out = TTY()
    screen = Screen(out, TTY(), progress=False)
    screen.renderer = MarkdownRenderer(color=color, width=80)
    for chunk in chunks:
        screen.write(chunk)
    screen.end_answer()
    return out.getvalue()


def test_blocks_end_at_a_blank_line_outside_a_code_fence():
    assert complete_blocks("one\n\ntwo\n\n\nthree") == (["one\n\n", "two\n\n"], "three")
    assert complete_blocks("```\na\n\nb\n") == ([], "```\na\n\nb\n")
    assert complete_blocks("```\na\n\nb\n```\nrest") == (["```\na\n\nb\n```\n"], "rest")
    assert complete_blocks("no blank line yet\n") == ([], "no blank line yet\n")


def test_blocks_are_one_blank_line_apart():
    text = _rendered(
        ["## Result\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```python\nx = 1\n\ny = 2\n```\nDone."], color=False
    )
    lines = [line.strip() for line in text.split("\n")]
    assert lines == ["Result", "", "a  b", "────", "1  2", "", "x = 1", "", "y = 2", "", "Done.", ""]


def test_a_streamed_answer_is_rendered_block_by_block_and_nothing_is_lost():
    out = TTY()
    screen = Screen(out, TTY(), progress=False)
    screen.renderer = MarkdownRenderer(color=True, width=80)
    screen.write("# Plan\n\nFirst **bold")
    assert "Plan" in out.getvalue() and "First" not in out.getvalue()  # the paragraph is not finished
    screen.write("** step.\nSecond line.\n\n- a\n- b")
    screen.end_answer()
    text = out.getvalue()
    assert "\x1b[1mbold\x1b[0m" in text
    plain = [line for line in _strip(text).split("\n") if line]
    assert plain[1:] == ["First bold step.", "Second line.", " • a", " • b"]  # its line breaks kept


def _strip(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_outside_text_cannot_become_an_escape_and_links_show_their_address():
    text = _rendered(
        [
            "Here \x1b]0;PWNED\x07 see [the docs](http://example.com/\x1b[2J) and \x9b31mred\r\n\n",
            "[bold]x[/bold] :smile:",
        ]
    )
    for raw in ("\x1b]", "\x07", "\x9b", "\x1b[2J"):
        assert raw not in text
    plain = _strip(text)
    assert "Here \\x1b]0;PWNED\\x07 see the docs (http://example.com/%5Cx1b%5B2J) and" in plain
    assert "\\x9b31mred" in plain
    assert "[bold]x[/bold] :smile:" in plain  # rich's markup and emoji codes are not parsed


def test_no_color_renders_without_any_escape():
    text = _rendered(["# Title\n\nSome **bold** and `code`.\n"], color=False)
    assert "\x1b" not in text and "Some bold and code." in text


def test_the_renderer_reads_no_color_from_the_environment(monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")
    assert MarkdownRenderer().color is False
    monkeypatch.delenv("NO_COLOR")
    assert MarkdownRenderer().color is True


def test_code_blocks_keep_their_lines():
    text = render_markdown("```python\nx = 1\n\ny = 2\n```", color=False, width=40)
    assert [line.strip() for line in text.split("\n") if line.strip()] == ["x = 1", "y = 2"]


def test_a_piped_answer_stays_raw_markdown(dirs, project, run_i):
    answer = "# Title\n\nSome **bold** text and a [link](http://example.com).\n"
    with ScriptedModel([{"text": answer}]) as model:
        (dirs["config"] / "config.json").write_bytes(
            orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m"})
        )
        result = run_i("-C", str(project), "say it")
    assert result.returncode == 0, result.stderr
    assert result.stdout.decode() == answer


def test_text_before_a_tool_call_is_drawn_before_the_call_line():
    terminal = TTY()
    screen = Screen(terminal, terminal, progress=False)
    screen.renderer = MarkdownRenderer(color=False, width=80)
    screen.write("Let me look at the **notes**.")
    screen.lines("● read notes.txt")
    screen.write("\n\nThey say hello.")
    screen.end_answer()
    shown = [line for line in terminal.getvalue().split("\n") if line]
    assert shown == ["Let me look at the notes.", "● read notes.txt", "They say hello."]
