"""Markdown answers rendered on a terminal with ``rich``: headings, lists, emphasis, code blocks.

Only for a stdout that is a terminal (piped, the answer stays byte-exact), and ``rich`` is imported
at the first block to render, never on the one-shot path's start. The text reaching the renderer
is already sanitised (``terminal_text``), so nothing from outside can become an escape; rich's
markup parsing, emoji codes and highlighting are off, and links are shown as their text and
address (no OSC 8 hyperlink, which could hide where it points).

A streamed answer is rendered block by block: a block (a paragraph, a list, a code block) is drawn
once a blank line outside a code fence ends it, the rest when the answer ends. Nothing drawn is
redrawn, so the terminal's scrollback keeps the answer as it was shown.
"""

from __future__ import annotations

import io
import os
import shutil
from typing import Any, Protocol

MAX_WIDTH = 120
"""Columns of a rendered answer at most (long lines read badly on a wide terminal)."""


class Renderer(Protocol):
    """What ``Screen`` hands the answer's text to on a terminal."""

    def feed(self, text: str) -> str:
        """Take streamed text; what can be drawn now."""

    def finish(self) -> str:
        """The answer ended: what is left, drawn."""


def _fence(line: str) -> str | None:
    stripped = line.lstrip()
    for mark in ("```", "~~~"):
        if stripped.startswith(mark):
            return mark
    return None


def complete_blocks(text: str) -> tuple[list[str], str]:
    """``text`` split into its finished blocks (each ended by a blank line outside a code fence, or by
    a closing fence) and the unfinished rest."""
    fence: str | None = None
    blocks: list[str] = []
    start = position = 0
    for line in text.splitlines(keepends=True):
        position += len(line)
        if not line.endswith("\n"):
            break  # a line still being streamed
        mark = _fence(line)
        if fence is None and mark is not None:
            fence = mark
        elif fence is not None and mark == fence and line.strip() == mark:
            fence = None
            blocks.append(text[start:position])
            start = position
        elif fence is None and not line.strip():
            blocks.append(text[start:position])
            start = position
    return [block for block in blocks if block.strip()], text[start:]


class MarkdownRenderer:
    """Renders an answer's markdown with rich, block by block (``Screen.renderer``)."""

    def __init__(self, *, color: bool | None = None, width: int | None = None) -> None:
        self.color = "NO_COLOR" not in os.environ if color is None else color
        self.width = width
        self._buffer = ""
        self._drawn = False  # this answer drew a block: the next one starts after a blank line

    def feed(self, text: str) -> str:
        """Take streamed text; the finished blocks rendered."""
        self._buffer += text
        done, self._buffer = complete_blocks(self._buffer)
        return "".join(self._draw(block) for block in done)

    def finish(self) -> str:
        """Render what is left of the answer; the next answer starts anew."""
        rest, self._buffer = self._buffer, ""
        drawn = self._draw(rest)
        self._drawn = False
        return drawn

    def _draw(self, markdown: str) -> str:
        if not markdown.strip():
            return ""
        # One blank line between blocks, none around them (rich pads tables and code with empty lines):
        # each block is rendered alone for that.
        drawn = render_markdown(markdown, color=self.color, width=self.width).strip("\n") + "\n"
        if self._drawn:
            drawn = "\n" + drawn
        self._drawn = True
        return drawn


def render_markdown(markdown: str, *, color: bool, width: int | None = None) -> str:
    """``markdown`` (already sanitised) as terminal text: rich's rendering, colour or not."""
    from rich.console import Console  # only here: rich stays off every start path
    from rich.markdown import Markdown

    columns = width if width is not None else min(shutil.get_terminal_size().columns, MAX_WIDTH)
    out = io.StringIO()
    console = Console(
        file=out,
        width=max(columns, 20),
        force_terminal=True,
        color_system="standard" if color else None,
        no_color=not color,
        markup=False,
        emoji=False,
        highlight=False,
        soft_wrap=False,
    )
    document = Markdown(markdown.strip("\n"), hyperlinks=False, code_theme="ansi_dark")
    _keep_line_breaks(document.parsed)
    console.print(document)
    # rich pads each line to the width with spaces: a copy from the terminal should not carry them.
    return "\n".join(line.rstrip(" ") for line in out.getvalue().split("\n"))


def _keep_line_breaks(tokens: list[Any]) -> None:
    """A line break inside a paragraph stays one (markdown would join the lines): a model writes
    lines for the terminal as often as it writes markdown, and a joined line list reads wrong."""
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"
