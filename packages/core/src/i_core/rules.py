"""Permission rules: ``allow`` / ``ask`` / ``deny`` patterns per tool, and what they decide for a call.

A rule is a tool name (``shell``, ``write``, ``mcp__git__*``: ``*`` matches any characters), or a
tool with a pattern in parentheses:

- ``shell(git status)``: that command exactly (its words after the shell's quoting);
  ``shell(npm test:*)``: that command followed by any arguments. A compound command is judged
  part by part (``command_parts``): deny when any part matches a deny rule, ask when any part
  matches an ask rule, allow only when every part matches an allow rule and nothing in it is opaque.
- ``read(~/.ssh/**)``, ``write(src/**)`` (also ``edit``, ``view_image``, ``glob``, ``search``): a
  path glob (``*`` within a folder, ``**`` across folders); ``~`` expands to the home folder, a
  relative pattern is relative to the workspace, ``..`` is normalised, and symlinks are resolved:
  a deny or ask rule matches the path as written or where it really leads, an allow rule only
  where it really leads (a symlink in ``src/`` to ``~/.bashrc`` is not in ``src/**``).

Order: deny > ask > allow; ``None`` when no rule matches (the mode decides).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import orjson

from i_protocol.atomic import atomic_write_bytes
from i_protocol.files import acquire_lock, read_json

from .command_parts import parse_command

PATH_TOOLS = frozenset({"read", "write", "edit", "view_image", "glob", "search"})
"""Built-in tools whose rules take a path glob (their ``path`` argument)."""
_FOLDER_DEFAULT = frozenset({"glob", "search"})  # their path defaults to the workspace
_RULE = re.compile(r"(?P<tool>[A-Za-z0-9_*-]{1,200})(?:\((?P<spec>.*)\))?", re.DOTALL)
_SUBCOMMAND = re.compile(r"[A-Za-z][A-Za-z0-9_.-]*")
SAVED_RULES_FILE = "approval.json"
"""The file under ``data_dir/workspaces/<id>/`` that keeps the user's saved allow rules."""


class RuleError(ValueError):
    """A rule that cannot be read; the message names it."""


@dataclass(frozen=True)
class Rule:
    """One parsed rule."""

    text: str
    tool: str
    words: tuple[str, ...] | None = None
    prefix: bool = False
    paths: tuple[re.Pattern[str], ...] | None = None

    @property
    def whole(self) -> bool:
        """True for a rule on a whole tool (no pattern)."""
        return self.words is None and self.paths is None

    def names(self, name: str) -> bool:
        """Whether this rule is about tool ``name``."""
        return fnmatchcase(name, self.tool)


def parse_rule(text: object, workspace: str) -> Rule:
    """A rule from its text; relative path patterns resolve against ``workspace``."""
    if not isinstance(text, str):
        raise RuleError(f"rule {text!r} is not a string")
    found = _RULE.fullmatch(text.strip())
    if found is None:
        raise RuleError(f"rule {text!r} is not TOOL or TOOL(PATTERN)")
    tool, spec = found["tool"], found["spec"]
    if spec is None:
        return Rule(text, tool)
    if tool == "shell":
        prefix = spec.endswith(":*")
        try:
            words = tuple(shlex.split(spec[:-2] if prefix else spec))
        except ValueError as exc:
            raise RuleError(f"rule {text!r}: {exc}") from None
        if not words:
            raise RuleError(f"rule {text!r} names no command")
        return Rule(text, tool, words=words, prefix=prefix)
    if tool in PATH_TOOLS:
        if not spec.strip():
            raise RuleError(f"rule {text!r} names no path")
        return Rule(text, tool, paths=_path_patterns(spec.strip(), workspace))
    raise RuleError(
        f"rule {text!r}: only shell and the path tools ({', '.join(sorted(PATH_TOOLS))}) take a pattern in "
        "parentheses; other tools are named whole (mcp__git__*)"
    )


def parse_rules(texts: Iterable[object], workspace: str) -> list[Rule]:
    """Each of ``texts`` parsed (RuleError names the first bad one)."""
    return [parse_rule(text, workspace) for text in texts]


@dataclass
class Rules:
    """The rules in force for one workspace."""

    allow: Sequence[Rule] = ()
    ask: Sequence[Rule] = ()
    deny: Sequence[Rule] = ()

    def decide(self, name: str, arguments: dict[str, Any], workspace: str) -> str | None:
        """``deny``, ``ask`` or ``allow`` for this call, or None when no rule speaks to it."""
        deny = [rule for rule in self.deny if rule.names(name)]
        ask = [rule for rule in self.ask if rule.names(name)]
        allow = [rule for rule in self.allow if rule.names(name)]
        if any(rule.whole for rule in deny):
            return "deny"
        if name == "shell" and any(rule.words is not None for rule in (*deny, *ask, *allow)):
            return _shell(arguments, workspace, deny, ask, allow)
        if any(rule.whole for rule in ask):
            return "ask"
        where = _call_paths(name, arguments, workspace)
        if where is not None:
            if any(_path_match(rule, where, strict=False) for rule in deny):
                return "deny"
            if any(_path_match(rule, where, strict=False) for rule in ask):
                return "ask"
        if any(rule.whole for rule in allow):
            return "allow"
        if where is not None and any(_path_match(rule, where, strict=True) for rule in allow):
            return "allow"
        return None


def _shell(
    arguments: dict[str, Any], workspace: str, deny: list[Rule], ask: list[Rule], allow: list[Rule]
) -> str | None:
    command = arguments.get("command")
    if not isinstance(command, str):
        return None
    parsed = parse_command(command, workspace)
    asks = any(rule.whole for rule in ask)
    for part in parsed.parts:
        for rule in deny:
            match = _words_match(rule, part.words, strict=False)
            if match == "yes":
                return "deny"
            asks = asks or match == "maybe"
        asks = asks or any(_words_match(rule, part.words, strict=False) != "no" for rule in ask)
    if asks:
        return "ask"
    # An opaque command may hide a part that a deny or ask rule names.
    if parsed.concerns and any(rule.words is not None for rule in (*deny, *ask)):
        return "ask"
    if any(rule.whole for rule in allow):
        return "allow"
    if parsed.concerns or not parsed.parts:
        return None
    patterns = [rule for rule in allow if rule.words is not None]
    if all(any(_words_match(rule, part.words, strict=True) == "yes" for rule in patterns) for part in parsed.parts):
        return "allow"
    return None


def _words_match(rule: Rule, words: tuple[str | None, ...], *, strict: bool) -> str:
    """``yes``, ``no``, or ``maybe`` (a word computed at run time might match; never for ``strict``)."""
    assert rule.words is not None
    want = rule.words
    unknown = None in words
    if len(words) < len(want) or (not rule.prefix and len(words) != len(want)):
        return "maybe" if unknown and not strict else "no"
    result = "yes"
    for index, (expected, got) in enumerate(zip(want, words, strict=False)):
        if got is None:
            if strict:
                return "no"
            result = "maybe"
        elif got != expected and not (index == 0 and not strict and os.path.basename(got) == expected):
            # A deny of `rm` also denies `/bin/rm`; an allow of `git` allows only `git` itself.
            return "no"
    return result


def _path_patterns(spec: str, workspace: str) -> tuple[re.Pattern[str], ...]:
    absolute = os.path.normpath(os.path.join(workspace, os.path.expanduser(spec)))
    parts = absolute.split("/")
    literal = next((index for index, part in enumerate(parts) if any(c in part for c in "*?")), len(parts))
    head = "/".join(parts[:literal]) or "/"
    real = os.path.join(os.path.realpath(head), *parts[literal:]) if literal < len(parts) else os.path.realpath(head)
    variants = dict.fromkeys((absolute, os.path.normpath(real)))
    return tuple(_glob_regex(variant) for variant in variants)


def _glob_regex(pattern: str) -> re.Pattern[str]:
    out, index = [], 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif pattern.startswith("**", index):
            out.append(".*")
            index += 2
        elif pattern[index] == "*":
            out.append("[^/]*")
            index += 1
        elif pattern[index] == "?":
            out.append("[^/]")
            index += 1
        else:
            out.append(re.escape(pattern[index]))
            index += 1
    return re.compile("".join(out), re.DOTALL)


def _call_paths(name: str, arguments: dict[str, Any], workspace: str) -> tuple[str, str] | None:
    """(as written, normalised; where it really leads) of a path tool's ``path``, as the tool resolves
    it (relative to the workspace, no ``~`` expansion)."""
    if name not in PATH_TOOLS:
        return None
    raw = arguments.get("path", "." if name in _FOLDER_DEFAULT else None)
    if not isinstance(raw, str) or "\x00" in raw:
        return None
    lexical = os.path.normpath(os.path.join(workspace, raw))
    return lexical, os.path.realpath(lexical)


def _path_match(rule: Rule, where: tuple[str, str], *, strict: bool) -> bool:
    if rule.paths is None:
        return False
    candidates = where[1:] if strict else where
    return any(pattern.fullmatch(path) for pattern in rule.paths for path in candidates)


def outside_workspace(name: str, arguments: dict[str, Any], workspace: str) -> str | None:
    """The path a path tool's call reaches outside the workspace (symlinks followed), else None."""
    where = _call_paths(name, arguments, workspace)
    if where is None:
        return None
    real_workspace = os.path.realpath(workspace)
    for path in where:
        if path != real_workspace and not path.startswith(real_workspace.rstrip("/") + "/"):
            return path
    return None


def suggested_rules(command: str, workspace: str) -> list[str]:
    """Allow rules the user may save for ``command``: one ``shell(NAME SUBCOMMAND:*)`` per part, none
    when anything in the command is opaque (that needs the exact command, every time)."""
    parsed = parse_command(command, workspace)
    if parsed.concerns or not parsed.parts:
        return []
    rules = []
    for part in parsed.parts:
        words = part.words
        if words[0] is None:
            return []
        head = [words[0]]
        if len(words) > 1 and words[1] is not None and _SUBCOMMAND.fullmatch(words[1]):
            head.append(words[1])
        rules.append(f"shell({shlex.join(head)}:*)")
    return list(dict.fromkeys(rules))


def save_allow_rules(state_dir: Path, rules: Sequence[str]) -> Path:
    """Add ``rules`` to the saved allow rules of a workspace (``data_dir/workspaces/<id>/approval.json``),
    under the file's lock, written atomically; the file's path."""
    path = state_dir / SAVED_RULES_FILE
    state_dir.mkdir(parents=True, exist_ok=True)
    lock = acquire_lock(path, timeout=10)
    try:
        try:
            data = read_json(path, 1 << 20, what="saved approval rules")
        except FileNotFoundError:
            data = {}
        kept = data.get("allow") if isinstance(data, dict) else None
        kept = [rule for rule in kept if isinstance(rule, str)] if isinstance(kept, list) else []
        allow = [*kept, *(rule for rule in rules if rule not in kept)]
        atomic_write_bytes(path, orjson.dumps({"allow": allow}, option=orjson.OPT_INDENT_2) + b"\n")
    finally:
        lock.release()
    return path
