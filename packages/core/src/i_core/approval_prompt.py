"""The approval question on the terminal (``ask_on_tty``) and the diff it shows of a change
(``change_preview``): loaded only where stdin and stderr are a terminal, so that a run can ask."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable
from typing import Protocol

from .diffs import change_diff
from .screen import Screen
from .terminal_text import clip, for_terminal


class Pausable(Protocol):
    """What reads the terminal while a turn runs (the console's steering reader): it stops while the
    question waits for its answer."""

    def pause(self) -> None:
        """Stop reading the terminal."""

    def resume(self) -> None:
        """Read the terminal again."""


MAX_PREVIEW_LINES = 60


def change_preview(prepared: object, limit: int = MAX_PREVIEW_LINES) -> str | None:
    """A unified diff of what an ``edit`` or ``write`` would do, at most ``limit`` lines."""
    lines = change_diff(prepared, limit)
    if lines is None:
        return None
    if not lines:
        return "(no change to the text)"
    # Control characters of a file must not reach the terminal as such.
    return "\n".join(for_terminal(line) for line in lines)


_ANSWERS = {"y": "y", "yes": "y", "a": "a", "always": "a", "d": "d", "deny": "d", "n": "n", "no": "n"}
PROMPT_LINES = 4
"""Terminal lines of a tool call the approval prompt shows before it says how much more there is."""


def ask_on_tty(
    screen: Screen, reader: Pausable | None = None, read_line: Callable[[], str] | None = None
) -> Callable[..., str]:
    """The approval question on the terminal: ``ask(summary, detail)`` -> ``y`` / ``n`` / ``a`` / ``d``.

    The call is shown sanitised and whole up to :data:`PROMPT_LINES` terminal lines; past that the
    question says how many characters it does not show, and ``v`` prints them all and asks again.
    Anything but yes/always/deny (Enter included) is No.
    """

    def ask(summary: str, detail: str | None = None) -> str:
        if reader is not None:
            reader.pause()
        try:
            if detail:
                screen.note(detail)
            whole = for_terminal(summary)
            width = max(shutil.get_terminal_size().columns, 40)
            shown, rest = clip(whole, PROMPT_LINES * width - 100, PROMPT_LINES)
            more = f"… (+{rest} more characters; press v to view all)" if rest else ""
            while True:
                screen.note(
                    f"[i] allow {shown}{more}? [y]es / [N]o / [a]lways this session / [d]eny this session"
                    + (" / [v]iew all: " if rest else ": "),
                    end="",
                )
                answer = (read_line or sys.stdin.readline)().strip().lower()
                if answer not in ("v", "view"):
                    return _ANSWERS.get(answer, "n")
                screen.note(f"[i] the whole call ({len(whole)} characters):\n{whole}")
        finally:
            if reader is not None:
                reader.resume()

    return ask


def offer_on_tty(
    screen: Screen, reader: Pausable | None = None, read_line: Callable[[], str] | None = None
) -> Callable[[list[str]], bool]:
    """After "always" for a shell command: ``offer(rules)`` asks whether to save its allow rules for
    this workspace (in the user's data folder, never in the project); the default is No."""

    def offer(rules: list[str]) -> bool:
        if reader is not None:
            reader.pause()
        try:
            shown = ", ".join(for_terminal(rule) for rule in rules)
            screen.note(f"[i] allowed for this session: {shown}; also save for this workspace? [y/N]: ", end="")
            return (read_line or sys.stdin.readline)().strip().lower() in ("y", "yes")
        finally:
            if reader is not None:
                reader.resume()

    return offer
