"""The "needed identifiers" rule of issue 30, fixed before the compactor changed (do not change it).

A compaction replaces ``history[1:cut]`` of a history cut at ``end`` (``history[:end]`` is what
the compactor sees; ``history[end:]`` is the rest of the run). What the model sees afterwards is
the system message, the summary message and the kept messages ``history[cut:end]``.

**Identifiers** are taken from the rest of the run's *assistant* messages (their text and the
string values of their tool-call arguments), in five kinds; a string is given the first kind
that takes it, in this order:

- ``url``: ``http(s)://…`` up to whitespace, quotes, brackets or a closing backtick;
- ``command``: each line of a shell command the assistant ran (a ``bash``/``sh`` fenced block in
  its text, or the ``command``/``cmd`` argument of a tool call), heredoc bodies left out, and each
  ``&&`` part of a line that has several; whitespace runs folded to one space; at least 4 chars;
- ``error``: exception names (``…Error``, ``…Exception``, ``…Warning``) and ``XError: message``
  fragments (the message up to the end of its line, a closing quote or backtick, at most 80 chars);
- ``path``: tokens with a ``/`` between name characters (not part of a URL), or a file name with
  a common source or document extension;
- ``symbol``: code symbols: snake_case (a ``_`` inside a name), CamelCase and lowerCamel, and dotted
  names (``a.b``, ``a.b.c``); at least 4 chars;
- ``id``: issue and PR ids (``#123``, ``GH-123``, ``ABC-123``) and commit SHAs (7 to 40 hex
  digits with a digit and a letter).

**Needed**: an identifier of the rest whose first occurrence in ``history[end:]`` (word-bounded,
any role) is in an assistant message — not supplied again by a user or tool message before that
use — that is present, word-bounded, in the compacted prefix ``history[1:cut]`` and absent from
the system message and the kept messages (compaction cannot lose what it keeps verbatim).

**Kept**: present, word-bounded, in what the model sees after compaction. Word-bounded means no
name character (``[A-Za-z0-9_]``) right before or after. Commands are matched with whitespace runs
folded to one space on both sides.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

KINDS = ("path", "symbol", "command", "error", "id", "url")

_URL = re.compile(r"https?://[^\s\"'`<>()\[\]{}]+")
_SHELLS = ("bash", "sh", "shell", "console", "zsh")
_HEREDOC = re.compile(r"<<-?\s*['\"]?([A-Za-z_][A-Za-z0-9_]*)['\"]?")
_ERROR_NAME = r"[A-Z][A-Za-z0-9_]*(?:Error|Exception|Warning)"
_ERROR_FRAGMENT = re.compile(rf"(?<![\w.])({_ERROR_NAME}): ([^\n`'\"]{{1,80}})")
_ERROR = re.compile(rf"(?<![\w.]){_ERROR_NAME}(?!\w)")
_EXTENSIONS = (
    "py|pyi|pyx|js|mjs|cjs|ts|tsx|jsx|json|jsonl|md|rst|txt|toml|cfg|ini|yaml|yml|sh|c|h|cc|cpp|hpp|rs|go|"
    "java|kt|rb|php|html|css|scss|lock|log|diff|patch|sql|xml|csv|ex|exs|heex|svelte|vue|zig|lua"
)
_PATH = re.compile(
    rf"(?<![\w/.-])(?:[\w.-]*[A-Za-z0-9_]/)+[\w.-]*[A-Za-z0-9_]|(?<![\w/.-])[\w-]+(?:\.[\w-]+)*\.(?:{_EXTENSIONS})(?![\w-])"
)
_SNAKE = re.compile(r"(?<![\w])_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*(?!\w)")
_CAMEL = re.compile(r"(?<![\w])(?:[A-Z][a-z0-9]+(?:[A-Z][A-Za-z0-9]*)+|[a-z][a-z0-9]*(?:[A-Z][A-Za-z0-9]*)+)(?!\w)")
_DOTTED = re.compile(r"(?<![\w./-])[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+(?![\w])")
_ISSUE = re.compile(r"(?<![\w#])(?:#\d{2,}|GH-\d+|[A-Z][A-Z0-9]+-\d+)(?!\w)")
_SHA = re.compile(r"(?<![\w])[0-9a-f]{7,40}(?![\w])")
_MIN = 4


def text_of(message: dict[str, Any]) -> str:
    """A message's text: its content (string or text parts) and its tool calls' argument values."""
    content = message.get("content")
    parts = [content] if isinstance(content, str) else []
    if isinstance(content, list):
        parts += [p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        parts.append(" ".join(_strings(_arguments(function.get("arguments")))))
    return "\n".join(parts)


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def commands_of(message: dict[str, Any]) -> list[str]:
    """The shell commands an assistant message runs: fenced bash blocks, ``command`` arguments."""
    scripts: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        scripts += _shell_blocks(content)
    for call in message.get("tool_calls") or []:
        function = call.get("function") or {} if isinstance(call, dict) else {}
        arguments = _arguments(function.get("arguments"))
        if isinstance(arguments, dict):
            scripts += [v for k, v in arguments.items() if k in ("command", "cmd") and isinstance(v, str)]
    found: list[str] = []
    for script in scripts:
        for line in _command_lines(script):
            found.append(line)
            parts = [" ".join(p.split()) for p in line.split("&&")]
            if len(parts) > 1:
                found += [p for p in parts if len(p) >= _MIN]
    return found


def _shell_blocks(text: str) -> list[str]:
    """The bodies of fenced blocks whose info string names a shell (fences paired in order)."""
    blocks: list[str] = []
    opened: str | None = None
    body: list[str] = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped.startswith("```"):
            body.append(line)
            continue
        if opened is None:
            opened, body = stripped[3:].strip().lower(), []
        else:
            if opened in _SHELLS:
                blocks.append("\n".join(body))
            opened = None
    return blocks


def _command_lines(script: str) -> list[str]:
    lines: list[str] = []
    until: str | None = None
    for raw in script.splitlines():
        if until is not None:
            if raw.strip() == until:
                until = None
            continue
        heredoc = _HEREDOC.search(raw)
        if heredoc:
            until = heredoc.group(1)
        line = " ".join(raw.split())
        if len(line) >= _MIN:
            lines.append(line)
    return lines


def identifiers(message: dict[str, Any]) -> dict[str, str]:
    """Every identifier of an assistant message, with its kind (the first kind that takes it)."""
    found: dict[str, str] = {}

    def add(value: str, kind: str) -> None:
        value = value.rstrip(".,:;")
        if len(value) >= _MIN or kind == "id":
            found.setdefault(value, kind)

    text = text_of(message)
    for url in _URL.findall(text):
        add(url, "url")
    text = _URL.sub(" ", text)
    for command in commands_of(message):
        add(command, "command")
    for name, rest in _ERROR_FRAGMENT.findall(text):
        add(f"{name}: {rest.strip()}", "error")
    for name in _ERROR.findall(text):
        add(name, "error")
    for path in _PATH.findall(text):
        if not path.startswith("//"):
            add(path, "path")
    text = _PATH.sub(" ", text)
    for pattern in (_SNAKE, _CAMEL, _DOTTED):
        for symbol in pattern.findall(text):
            add(symbol, "symbol")
    for ident in _ISSUE.findall(text):
        add(ident, "id")
    for sha in _SHA.findall(text):
        if any(c.isdigit() for c in sha) and any(c.isalpha() for c in sha):
            add(sha, "id")
    return found


@dataclass
class Corpus:
    """Texts to search word-bounded: raw, and whitespace-folded for commands."""

    raw: str
    folded: str = field(init=False)

    def __post_init__(self) -> None:
        self.folded = " ".join(self.raw.split())

    def has(self, value: str, kind: str) -> bool:
        return contains(self.folded if kind == "command" else self.raw, value)


def contains(text: str, value: str) -> bool:
    """``value`` in ``text`` with no name character right before or after it."""
    start = text.find(value)
    while start >= 0:
        end = start + len(value)
        before = text[start - 1] if start else " "
        after = text[end] if end < len(text) else " "
        if not _name_char(before) and not _name_char(after):
            return True
        start = text.find(value, start + 1)
    return False


def _name_char(char: str) -> bool:
    return char.isalnum() or char == "_"


def corpus(messages: list[dict[str, Any]]) -> Corpus:
    return Corpus("\n".join(text_of(m) for m in messages))


def needed(history: list[dict[str, Any]], cut: int, end: int) -> dict[str, str]:
    """The identifiers the rest of the run needs from the compacted prefix: ``{identifier: kind}``."""
    prefix = corpus(history[1:cut])
    seen = corpus([history[0], *history[cut:end]])
    out: dict[str, str] = {}
    decided: set[str] = set()
    supplied: list[str] = []
    earlier: Corpus | None = None
    for message in history[end:]:
        if message.get("role") != "assistant":
            supplied.append(text_of(message))
            earlier = None
            continue
        for value, kind in identifiers(message).items():
            if value in decided:
                continue
            decided.add(value)
            if earlier is None:
                earlier = Corpus("\n".join(supplied))
            if earlier.has(value, kind):
                continue
            if prefix.has(value, kind) and not seen.has(value, kind):
                out[value] = kind
    return out
