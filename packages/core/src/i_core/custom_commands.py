"""Custom slash commands: markdown files whose text becomes the request, as Claude Code's and
opencode's commands do.

``<project>/.i/commands/NAME.md`` and ``<config_dir>/commands/NAME.md`` make ``/NAME [ARGUMENTS]``
(a project's file wins over the config folder's of the same name; neither may take a built-in
command's name). The file's text is sent as the user's request, ``$ARGUMENTS`` replaced by
everything after the name and ``$1`` … ``$9`` by its words; when the text holds neither, the
arguments follow it on a line of their own. An optional front matter (``---`` lines) may give
``description`` (what ``/help`` shows; default: the first line of the text) and ``argument-hint``
(shown after the name); its other keys (``model``, ``allowed-tools``, ``agent``) are not supported
and are ignored. Only the console reads them: line mode, piped input and ``i "task"`` send a line
that starts with ``/`` as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from i_protocol.errors import FileTooLarge
from i_protocol.files import read_bytes

from .errors import os_problem

MAX_COMMAND_BYTES = 64 * 1024
MAX_COMMANDS = 200
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_POSITIONAL = re.compile(r"\$([1-9])")


@dataclass(frozen=True)
class CustomCommand:
    """One command file: its name, where it came from, what ``/help`` says, and its text."""

    name: str
    path: Path
    origin: str
    """``project`` or ``user`` (the config folder)."""
    description: str
    argument_hint: str
    template: str

    def expand(self, arguments: str) -> str:
        """The request the command sends with ``arguments``."""
        words = arguments.split()
        has_slots = "$ARGUMENTS" in self.template or _POSITIONAL.search(self.template) is not None
        text = self.template.replace("$ARGUMENTS", arguments)
        text = _POSITIONAL.sub(lambda m: words[int(m[1]) - 1] if int(m[1]) <= len(words) else "", text)
        if arguments and not has_slots:
            text = f"{text.rstrip()}\n\n{arguments}"
        return text


def command_folders(workspace: str, config_dir: str | Path) -> list[tuple[str, Path]]:
    """Where command files are read, the winning folder first."""
    return [("project", Path(workspace) / ".i" / "commands"), ("user", Path(config_dir) / "commands")]


def load_commands(folders: list[tuple[str, Path]], reserved: set[str]) -> tuple[list[CustomCommand], list[str]]:
    """The commands of ``folders`` (earlier folders win a name) and one line per file left out."""
    found: dict[str, CustomCommand] = {}
    problems: list[str] = []
    for origin, folder in folders:
        try:
            paths = sorted(path for path in folder.iterdir() if path.suffix == ".md")
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{folder}: the command folder cannot be read: {os_problem(exc)}")
            continue
        for path in paths:
            name = path.stem
            if name in found:
                continue  # the project's file of that name wins
            if not NAME.fullmatch(name):
                problems.append(f"{path}: not a command name (letters, digits, '_', '.', '-'; 1-64); left out")
                continue
            if name in reserved:
                problems.append(f"{path}: /{name} is a built-in command; the file is left out")
                continue
            if len(found) >= MAX_COMMANDS:
                problems.append(f"{folder}: more than {MAX_COMMANDS} commands; the rest are left out")
                break
            command = _read(path, name, origin, problems)
            if command is not None:
                found[name] = command
    return sorted(found.values(), key=lambda c: c.name), problems


def _read(path: Path, name: str, origin: str, problems: list[str]) -> CustomCommand | None:
    try:
        raw = read_bytes(path, MAX_COMMAND_BYTES, what="the command file")
    except FileTooLarge:
        problems.append(f"{path}: larger than {MAX_COMMAND_BYTES // 1024} KiB; left out")
        return None
    except OSError as exc:  # a FIFO or a device too: only a regular file is read
        problems.append(f"{path}: cannot be read: {os_problem(exc)}; left out")
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        problems.append(f"{path}: not UTF-8 text; left out")
        return None
    fields, body = front_matter(text)
    body = body.strip()
    if not body:
        problems.append(f"{path}: has no text to send; left out")
        return None
    first = body.splitlines()[0].strip().lstrip("# ")
    description = " ".join(fields.get("description", "").split()) or first
    return CustomCommand(name, path, origin, description[:120], fields.get("argument-hint", "")[:60], body)


def front_matter(text: str) -> tuple[dict[str, str], str]:
    """(``key: value`` fields of a leading ``---`` block, the text after it); no block: ({}, text)."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].strip() != "---":
        return {}, text
    for end in range(1, len(lines)):
        if lines[end].strip() == "---":
            fields = {}
            for line in lines[1:end]:
                key, colon, value = line.partition(":")
                if colon and key.strip():
                    fields[key.strip().lower()] = value.strip().strip("\"'")
            return fields, "".join(lines[end + 1 :])
    return {}, text
