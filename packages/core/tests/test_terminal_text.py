"""The terminal sanitiser: a corpus of hostile sequences, properties over any text, and the
console's screen using it for every line it writes to a terminal (never for piped answers)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_core.approval_prompt import change_preview
from i_core.screen import Screen
from i_core.terminal_text import BIDI_CONTROLS, FORBIDDEN, clip, for_terminal

CORPUS = json.loads((Path(__file__).parent / "corpus" / "hostile_terminal.json").read_text())["cases"]


@pytest.mark.parametrize("case", CORPUS, ids=[case["name"] for case in CORPUS])
def test_each_hostile_sequence_is_shown_as_visible_text(case):
    shown = for_terminal(case["text"])
    assert shown == case["shown"]
    assert not any(ord(ch) in FORBIDDEN for ch in shown)
    assert "\x1b" not in shown and "\r" not in shown


def test_the_forbidden_set_is_c0_but_tab_and_newline_del_c1_and_the_bidi_controls():
    assert {*range(0x20), 0x7F, *range(0x80, 0xA0), *BIDI_CONTROLS} - {0x09, 0x0A} == FORBIDDEN
    assert {0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069} == BIDI_CONTROLS


def test_undecodable_bytes_are_shown_as_hex_not_written_raw():
    assert for_terminal("caf\udce9 \udc9b2K") == "caf\\xe9 \\x9b2K"  # 0x9b: a one-byte CSI on some terminals


@given(st.text())
def test_the_output_never_holds_a_forbidden_code_point(text):
    shown = for_terminal(text)
    assert not any(ord(ch) in FORBIDDEN for ch in shown)
    shown.encode("utf-8")  # no lone surrogate either: it can always be written


_PRINTABLE = st.text(st.characters(exclude_categories=("Cs",), exclude_characters=[chr(c) for c in FORBIDDEN] + ["\r"]))


@given(_PRINTABLE)
def test_printable_text_is_unchanged(text):
    assert for_terminal(text) == text


@given(st.text())
def test_sanitising_twice_changes_nothing_more(text):
    once = for_terminal(text)
    assert for_terminal(once) == once


@given(st.text(), st.integers(0, 200))
def test_a_text_cut_anywhere_shows_the_same_as_the_whole(text, cut):
    # Streamed answers are sanitised chunk by chunk: no sequence may survive a split.
    if "\r" in text:
        return  # a CR at a cut is held back by the screen (test below)
    assert for_terminal(text[:cut]) + for_terminal(text[cut:]) == for_terminal(text)


def test_clip_says_how_much_it_left_out():
    assert clip("abc", 10, 4) == ("abc", 0)
    assert clip("x" * 30, 10, 4) == ("x" * 10, 20)
    assert clip("a\nb\nc\nd\ne", 100, 3) == ("a\nb\nc", 4)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


HOSTILE = "Done.\x1b]0;PWNED\x07 \x1b[2K\x9b1A\u202eevil\r\n"


def test_an_answer_on_a_terminal_is_sanitised():
    out, err = _Tty(), _Tty()
    screen = Screen(out, err, progress=False)
    screen.write(HOSTILE)
    assert out.getvalue() == "Done.\\x1b]0;PWNED\\x07 \\x1b[2K\\x9b1A\\u202eevil\n"


def test_a_piped_answer_is_byte_exact():
    out, err = io.StringIO(), _Tty()
    screen = Screen(out, err, progress=False)
    screen.write(HOSTILE)
    assert out.getvalue() == HOSTILE


def test_a_streamed_cr_lf_cut_between_chunks_is_one_newline_and_a_lone_cr_is_shown():
    out = _Tty()
    screen = Screen(out, _Tty(), progress=False)
    for chunk in ("one\r", "\ntwo\r", "three\r"):
        screen.write(chunk)
    screen.end_answer()
    assert out.getvalue() == "one\ntwo\u240dthree\u240d\n"


def test_notes_and_progress_are_sanitised_even_when_stderr_is_piped():
    err = io.StringIO()
    screen = Screen(io.StringIO(), err, progress=True)
    screen.note("i: worker said \x1b]2;PWNED\x1b\\ and \x9b2J")
    assert err.getvalue() == "i: worker said \\x1b]2;PWNED\\x1b\\ and \\x9b2J\n"
    tty = _Tty()
    screen = Screen(io.StringIO(), tty, progress=True)
    screen.progress("running mcp__x__\x1b[2Jtool")
    assert "\\x1b[2Jtool" in tty.getvalue() and "\x1b[2J" not in tty.getvalue()


def test_a_diff_preview_shows_c1_and_bidi_controls_visibly(tmp_path):
    class Prepared:
        name, path = "write", tmp_path / "f.txt"
        arguments = {"path": "f.txt", "content": "a\x9b2Kb\u202ec\n"}

    preview = change_preview(Prepared())
    assert preview is not None and "+a\\x9b2Kb\\u202ec" in preview
    assert not any(ord(ch) in FORBIDDEN for ch in preview)
