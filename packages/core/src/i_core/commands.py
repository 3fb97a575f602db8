"""The console's slash commands: one registry (what ``/help`` lists) and the rule that tells a
command from text.

A line is a command when it is ``/`` plus a registered name, followed by a space or the end of the
line. A first word that holds another ``/`` (``/usr/lib/x is broken``) is text; ``//`` at the start
sends the rest with one slash (``//compact`` is the text ``/compact``); any other ``/word`` is an
unknown command: an error with a suggestion, never sent to the model. Pure: no terminal, no agent.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Command:
    """One slash command: its name (without ``/``), how it is called, what it does, the handler."""

    name: str
    usage: str
    summary: str
    run: Callable[[str], Any]
    """Called with the arguments (the rest of the line after the name, stripped)."""
    origin: str = "built in"
    aliases: tuple[str, ...] = ()


@dataclass(frozen=True)
class Text:
    """The line is a request for the model (``text`` is what is sent)."""

    text: str


@dataclass(frozen=True)
class Invoke:
    """The line runs ``command`` with ``args``."""

    command: Command
    args: str


@dataclass(frozen=True)
class Unknown:
    """``/word`` names no command: ``message`` says so in one line (with a suggestion when one is close)."""

    word: str
    message: str


Parsed = Text | Invoke | Unknown
_SPACE = re.compile(r"\s")
"""What ends a command's name: a space, a tab, or the end of the first line of a multi-line request."""


@dataclass
class Registry:
    """The commands the console knows, in the order ``/help`` lists them."""

    commands: dict[str, Command] = field(default_factory=dict)
    _aliases: dict[str, str] = field(default_factory=dict)

    def add(self, command: Command) -> None:
        """Register ``command``; a name (or alias) already taken is a ValueError."""
        for name in (command.name, *command.aliases):
            if self.get(name) is not None:
                raise ValueError(f"/{name} is already a command")
        self.commands[command.name] = command
        for alias in command.aliases:
            self._aliases[alias] = command.name

    def get(self, name: str) -> Command | None:
        """The command of ``name`` (or of an alias), or None."""
        return self.commands.get(self._aliases.get(name, name))

    def names(self) -> list[str]:
        """Every name and alias, for suggestions."""
        return [*self.commands, *self._aliases]

    def help_lines(self) -> list[str]:
        """``/help``: one line per command, its usage and what it does, custom commands last."""
        rows = sorted(self.commands.values(), key=lambda c: c.origin != "built in")
        width = max((len(c.usage) for c in rows), default=0)
        lines = []
        for command in rows:
            also = f" (also /{', /'.join(command.aliases)})" if command.aliases else ""
            origin = "" if command.origin == "built in" else f" [{command.origin}]"
            lines.append(f"  {command.usage.ljust(width)}  {command.summary}{also}{origin}")
        return lines

    def parse(self, line: str) -> Parsed:
        """What ``line`` is: text for the model, a command to run, or an unknown command."""
        return parse(line, self)


def parse(line: str, registry: Registry) -> Parsed:
    """The console's rule for a line (see the module docstring)."""
    if not line.startswith("/"):
        return Text(line)
    if line.startswith("//"):
        return Text(line[1:])
    found = _SPACE.search(line)
    word, rest = (line[: found.start()], line[found.end() :]) if found else (line, "")
    name = word[1:]
    if "/" in name:
        return Text(line)
    command = registry.get(name)
    if command is not None:
        return Invoke(command, rest.strip())
    return Unknown(word, unknown_message(word, registry.names()))


def unknown_message(word: str, names: Iterable[str]) -> str:
    """One line: ``/word`` is not a command, the closest one if any, and how to send it as text."""
    name = word[1:]
    if not name:
        return "a lone / is not a command; /help lists the commands; start a line with // to send it as text"
    close = difflib.get_close_matches(name.lower(), list(names), n=1, cutoff=0.5)
    hint = f"; did you mean /{close[0]}?" if close else ""
    return (
        f"unknown command {word}{hint} (/help lists the commands; start the line with // to send it "
        "to the model as text); nothing was sent"
    )
