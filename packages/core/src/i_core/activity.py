"""What the user sees of the tools a turn runs: a line when a call starts and one when it ends (the
tool, its key argument, the outcome), the result folded to a few lines (``/more`` shows it whole)
and a bounded, coloured diff after every ``write`` and ``edit``.

``Activity`` is the agent's ``AgentOptions.events`` listener on the text paths (the event stream
has its own). Everything it shows of a call (names, arguments, output, file text) is outside text
and goes through the terminal sanitiser (``terminal_text``) before the few escapes it adds itself
(colour only on a terminal without ``NO_COLOR``). On a stderr that is not a terminal it writes one
plain line per call, when it ends, and no results or diffs (a log keeps the outcome; the session
keeps the rest). ``--quiet`` shows none of it.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

import orjson

from .terminal_text import for_terminal


class Surface(Protocol):
    """Where activity is drawn: stderr as ``screen.Screen`` shares it with the answer."""

    err_tty: bool
    color: bool

    def lines(self, text: str) -> None:
        """Lines the core composed (outside parts already sanitised)."""


FOLD_LINES = 3
"""Lines of a result shown under its end line; ``/more`` shows the rest."""
MAX_DIFF_LINES = 40
"""Lines of a diff shown after a ``write`` or ``edit`` (then one line that says how many more)."""
MAX_ARGUMENT_CHARS = 100
"""Characters of a call's key argument on its line."""
MAX_MORE_CHARS = 200_000
"""What ``/more`` shows of one result at most (a tool's output is already cut to the tool budget)."""
KEPT_RESULTS = 20
"""Results ``/more N`` can still show (the newest ones)."""

_KEY_ARGUMENT = {
    "read": "path",
    "write": "path",
    "edit": "path",
    "view_image": "path",
    "shell": "command",
    "glob": "pattern",
    "search": "pattern",
    "recall": "id",
}
_READ_LINE = re.compile(r"^\s*\d+\t")
_EXIT = re.compile(r"\[exit code (-?\d+)\]$|\[killed by signal (\d+)\]$|\[timed out after ([0-9.]+) s")
_DIFF_COLOURS = {"+": "32", "-": "31", "@": "36"}


@dataclass
class _Call:
    name: str
    argument: str
    started: float
    diff: list[str] | None = None


@dataclass
class Folded:
    """A result shown folded: its call's line (sanitised) and its whole text (raw: ``/more`` shows it
    through the sanitiser), for ``/more``."""

    title: str
    text: str


def key_argument(name: str, raw: str) -> str:
    """The argument that says what a call does (a path, a command, a pattern), on one line; for
    another tool its arguments as compact JSON, cut."""
    try:
        arguments = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError:
        arguments = raw
    key = _KEY_ARGUMENT.get(name)
    if isinstance(arguments, dict) and key is not None and isinstance(arguments.get(key), str):
        text = arguments[key]
    elif isinstance(arguments, dict) and not arguments:
        text = ""
    else:
        text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    text = " ".join(text.split())  # one line, whatever the argument held
    if len(text) > MAX_ARGUMENT_CHARS:
        text = text[: MAX_ARGUMENT_CHARS - 1] + "…"
    return for_terminal(text)


def outcome(name: str, output: str, is_error: bool, seconds: float) -> str:
    """What a call's end line says of its result: lines read, exit code and time, bytes written, or
    the first line of its error."""
    lines = output.split("\n")
    if is_error:
        first = next((line for line in lines if line.strip()), "failed")
        return "failed: " + for_terminal(first[:200])
    if name == "read":
        count = sum(1 for line in lines if _READ_LINE.match(line))
        return f"{count} line{'s' if count != 1 else ''}"
    if name == "shell":
        found = _EXIT.search(output.rstrip())
        status = "done"
        if found and found.group(1) is not None:
            status = f"exit {found.group(1)}"
        elif found and found.group(2) is not None:
            status = f"killed by signal {found.group(2)}"
        return f"{status} · {seconds:.1f} s"
    if name in ("write", "edit") and lines:
        return for_terminal(lines[0][:200])
    return f"{len(lines)} line{'s' if len(lines) != 1 else ''} · {seconds:.1f} s"


def _folded_body(name: str, output: str) -> str:
    """The part of a result worth folding under its line (a ``shell`` call's status line and a
    ``write``/``edit`` confirmation are already on the end line; a ``read`` shows no file text)."""
    if name in ("read", "write", "edit", "view_image"):
        return ""
    lines = output.rstrip("\n").split("\n")
    if name == "shell" and lines and _EXIT.search(lines[-1]):
        lines = lines[:-1]
    return "\n".join(lines).strip("\n")


class Activity:
    """The agent's event listener that draws tool activity on the screen (stderr)."""

    def __init__(self, screen: Surface, *, live: bool | None = None) -> None:
        self.screen = screen
        self.live = screen.err_tty if live is None else live
        """A terminal: start lines, folded results and diffs too (else one plain line per call)."""
        self.color = screen.color and self.live
        self._calls: dict[str, _Call] = {}
        self.results: list[Folded] = []
        """Folded results, oldest first (``/more N`` counts from the newest)."""

    def _paint(self, code: str, text: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def event(self, kind: str, data: dict[str, Any]) -> None:
        """One agent event (``tool_call``, ``approval``, ``tool_result``, ``compaction``)."""
        ident = str(data.get("id"))
        if kind == "tool_call":
            name = for_terminal(str(data.get("name")))
            call = _Call(name, key_argument(str(data.get("name")), str(data.get("arguments") or "")), time.monotonic())
            self._calls[ident] = call
            if self.live:
                self.screen.lines(self._paint("1", f"● {call.name}") + (f" {call.argument}" if call.argument else ""))
        elif kind == "approval" and ident in self._calls:
            call = self._calls[ident]
            call.started = time.monotonic()  # the time it ran, not the time the user took to answer
            prepared = data.get("_prepared")
            if prepared is not None and self.live:
                from .diffs import change_diff  # difflib only when a change is shown

                call.diff = change_diff(prepared, MAX_DIFF_LINES)
        elif kind == "tool_result" and ident in self._calls:
            self._ended(self._calls.pop(ident), str(data.get("output") or ""), bool(data.get("is_error")))

    def _ended(self, call: _Call, output: str, is_error: bool) -> None:
        said = outcome(call.name, output, is_error, time.monotonic() - call.started)
        if not self.live:
            self.screen.lines(f"[i] {call.name}{' ' + call.argument if call.argument else ''}: {said}")
            return
        mark = self._paint("31", "✗") if is_error else self._paint("2", "⎿")
        shown = [f"  {mark} {said}"]
        body = "" if is_error else _folded_body(call.name, output)
        if body:
            shown.extend(self._fold(f"{call.name} {call.argument}", body))
        if call.diff and not is_error:
            shown.extend("    " + self._diff_line(line) for line in call.diff)
        self.screen.lines("\n".join(shown))

    def _fold(self, title: str, body: str) -> list[str]:
        lines = for_terminal(body).split("\n")
        shown = [self._paint("2", "    " + line[:500]) for line in lines[:FOLD_LINES]]
        rest = len(lines) - FOLD_LINES
        if rest > 0:
            self.results.append(Folded(title, body[:MAX_MORE_CHARS]))
            del self.results[:-KEPT_RESULTS]
            shown.append(self._paint("2", f"    … +{rest} line{'s' if rest != 1 else ''} (/more shows all)"))
        return shown

    def _diff_line(self, line: str) -> str:
        text = for_terminal(line)
        if line.startswith(("+++", "---")):
            return self._paint("1", text)
        code = _DIFF_COLOURS.get(line[:1])
        return self._paint(code, text) if code else text

    def more(self, argument: str = "") -> str:
        """``/more [N]``: the whole text of the newest folded result (N: the Nth newest), or what is wrong."""
        if not self.results:
            return "[i] no folded result to show"
        try:
            back = int(argument) if argument.strip() else 1
        except ValueError:
            return f"[i] /more takes a number (1 = the newest folded result), not {for_terminal(argument)!r}"
        if not 1 <= back <= len(self.results):
            return f"[i] /more {back}: there are {len(self.results)} folded result(s)"
        found = self.results[-back]
        return f"[i] {found.title}:\n{found.text}"
