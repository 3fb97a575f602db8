"""A shell command, part by part, for permission rules: every simple command it would run, and the
reasons no rule can vouch for it.

Parsed with tree-sitter-bash (a real shell grammar, MIT; the core README says why and what it
costs). The parser is imported at the first call only, so a run whose rules never look inside a
shell command does not pay for it. Each part is one simple command as the shell would run it:
the parts of ``&&``, ``||``, ``;``, ``|`` and ``&``, and those inside ``$(…)``, backticks, ``(…)``,
``{…}``, loops and conditions. A word the shell would compute (``$X``, ``$(…)``, ``$'…'``) is
``None``: it never matches a rule's literal word.

``concerns`` are what makes the command opaque to rules (SPEC §3.4 "permission rules"): an
interpreter or wrapper that runs other text (``bash -c``, ``eval``, ``xargs``, ``env``, ``sudo``, …),
``find -exec``, a ``VAR=x`` prefix or assignment, a function definition, an alias, a here-doc or
here-string, process substitution, a computed command name, a redirection to a path outside the
workspace (or not known until run time), and anything the parser cannot read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

WRAPPERS = frozenset(
    {
        # Shells and interpreters of their argument text.
        *("sh", "bash", "dash", "zsh", "ksh", "mksh", "fish", "csh", "tcsh", "busybox", "eval", "exec"),
        *("source", ".", "alias", "unalias", "builtin", "command", "xargs", "parallel"),
        # Wrappers that run the rest of their arguments as a command.
        *("env", "nohup", "timeout", "sudo", "doas", "su", "runuser", "nice", "ionice", "stdbuf", "time"),
        *("setsid", "chroot", "unshare", "nsenter", "strace", "ltrace", "watch", "flock", "script"),
        *("taskset", "chrt", "setpriv", "firejail", "bwrap", "trap"),
    }
)
"""Command names whose arguments are (or contain) another command the rules cannot see."""

_FIND_RUNS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
_CHANGES_DIR = frozenset({"cd", "pushd", "popd"})
_SAFE_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})
_INPUT_ONLY = frozenset({"<", "<&"})


@dataclass(frozen=True)
class Part:
    """One simple command: its words as the shell would pass them (``None``: computed at run time)."""

    words: tuple[str | None, ...]
    text: str

    @property
    def name(self) -> str | None:
        """The command name as written (``None`` when computed)."""
        return self.words[0] if self.words else None


@dataclass
class ParsedCommand:
    """The parts of a command and why no rule can vouch for the whole (``concerns``, empty: none)."""

    parts: list[Part] = field(default_factory=list)
    concerns: list[str] = field(default_factory=list)


@lru_cache(maxsize=1)
def _parser() -> Any:
    import tree_sitter
    import tree_sitter_bash

    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parse_command(command: str, workspace: str) -> ParsedCommand:
    """The parts and concerns of ``command`` run in ``workspace`` (a canonical absolute path)."""
    source = command.encode("utf-8", "surrogateescape")
    tree = _parser().parse(source)
    walk = _Walk(source, workspace)
    try:
        walk.visit(tree.root_node)
    except RecursionError:  # thousands of nested $( ): no rule can vouch for what it runs
        walk.concern("the command is nested too deeply to read")
    if tree.root_node.has_error:
        walk.concern("the shell parser cannot read the command")
    return ParsedCommand(walk.parts, list(dict.fromkeys(walk.concerns)))


class _Walk:
    def __init__(self, source: bytes, workspace: str) -> None:
        self.source = source
        self.workspace = workspace
        self.parts: list[Part] = []
        self.concerns: list[str] = []
        # Every folder a part may run in: a cd inside the workspace adds one (whichever way the
        # command's lists and subshells go); a cd that may leave it is a concern.
        self.folders = {workspace}

    def concern(self, text: str) -> None:
        self.concerns.append(text)

    def text(self, node: Any) -> str:
        return self.source[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape")

    def visit(self, node: Any) -> None:
        kind = node.type
        if kind == "ERROR" or node.is_missing:
            self.concern("the shell parser cannot read the command")
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, node)
            return
        for child in node.children:
            self.visit(child)

    def command(self, node: Any) -> None:
        words: list[str | None] = []
        for child in node.children:
            if child.type == "variable_assignment":
                self.concern(f"a variable set for the command ({self.text(child)[:40]})")
                self.visit_inside(child)
            elif child.type == "command_name":
                words.append(self.word(child.named_children[0] if child.named_children else child))
                self.visit(child)
            elif child.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                self.visit(child)
            elif child.is_named:
                words.append(self.word(child))
                self.visit(child)
        part = Part(tuple(words), self.text(node))
        if not words:
            return
        self.parts.append(part)
        name = part.name
        if name is None:
            self.concern("a command name computed at run time")
            return
        base = os.path.basename(name)
        if base in WRAPPERS:
            self.concern(f"{base} runs a command the rules cannot see")
        elif base == "find" and any(word in _FIND_RUNS for word in words[1:]):
            self.concern("find -exec runs a command the rules cannot see")
        elif base in _CHANGES_DIR:
            self.change_dir(base, words[1:])

    def change_dir(self, name: str, arguments: list[str | None]) -> None:
        targets = [word for word in arguments if word is None or not word.startswith("-") or word == "-"]
        target = targets[0] if targets else None
        if name == "popd" or target is None or target == "-":
            self.concern(f"{name} to a folder not known before it runs")
            return
        reached = {os.path.normpath(os.path.join(folder, os.path.expanduser(target))) for folder in self.folders}
        if not all(_inside(os.path.realpath(folder), self.workspace) for folder in reached):
            self.concern(f"{name} {target} leaves the workspace")
            return
        self.folders |= reached

    def redirect(self, node: Any) -> None:
        operator = next((self.text(child) for child in node.children if not child.is_named), "")
        targets = [child for child in node.named_children if child.type != "file_descriptor"]
        for child in node.children:
            self.visit_inside(child)
        if operator in _INPUT_ONLY or (operator in (">&", "<&") and all(t.type == "number" for t in targets)):
            return
        for target in targets:
            if target.type == "number" and operator in (">&", "&>"):
                continue
            path = self.word(target)
            if path is None:
                self.concern(f"a redirection to a path computed at run time ({self.text(target)[:40]})")
                continue
            if path == "-" and operator.endswith("&"):
                continue
            expanded = os.path.expanduser(path)
            for folder in self.folders:
                absolute = os.path.normpath(os.path.join(folder, expanded))
                if absolute not in _SAFE_TARGETS and not _inside(os.path.realpath(absolute), self.workspace):
                    self.concern(f"a redirection to {path} (outside the workspace)")

    def visit_inside(self, node: Any) -> None:
        """Substitutions inside a redirection's words are commands too."""
        if node.type in ("command_substitution", "process_substitution"):
            self.visit(node)
            return
        for child in node.children:
            self.visit_inside(child)

    def word(self, node: Any) -> str | None:
        """The literal value of a word node, or None when the shell computes it."""
        kind = node.type
        raw = self.text(node)
        if kind in ("word", "number"):
            return _unescape(raw) if "\\" in raw else raw
        if kind == "raw_string":
            return raw[1:-1]
        if kind == "string":
            if any(child.type not in ('"', "string_content") for child in node.children):
                return None
            return _unescape_double(raw[1:-1])
        if kind == "concatenation":
            pieces = [self.word(child) for child in node.children]
            return None if any(piece is None for piece in pieces) else "".join(p for p in pieces if p is not None)
        return None


def _substitution(walk: _Walk, node: Any) -> None:
    for child in node.children:
        walk.visit(child)


def _process_substitution(walk: _Walk, node: Any) -> None:
    walk.concern("process substitution")
    _substitution(walk, node)


def _heredoc(walk: _Walk, node: Any) -> None:
    walk.concern("a here-document or here-string")
    walk.visit_inside(node)


def _assignment(walk: _Walk, node: Any) -> None:
    walk.concern(f"a variable assignment ({walk.text(node)[:40]})")
    walk.visit_inside(node)


def _declaration(walk: _Walk, node: Any) -> None:
    walk.concern(f"{walk.text(node).split(maxsplit=1)[0]} changes the shell's variables")
    walk.visit_inside(node)


def _function(walk: _Walk, node: Any) -> None:
    walk.concern("a function definition")
    for child in node.children:
        walk.visit(child)


_HANDLERS: dict[str, Any] = {
    "command": _Walk.command,
    "file_redirect": _Walk.redirect,
    "heredoc_redirect": _heredoc,
    "herestring_redirect": _heredoc,
    "command_substitution": _substitution,
    "process_substitution": _process_substitution,
    "variable_assignment": _assignment,
    "variable_assignments": _assignment,
    "declaration_command": _declaration,
    "unset_command": _declaration,
    "function_definition": _function,
    "comment": lambda walk, node: None,
}


def _inside(path: str, workspace: str) -> bool:
    return path == workspace or path.startswith(workspace.rstrip("/") + "/")


def _unescape(text: str) -> str:
    out, escaped = [], False
    for char in text:
        if escaped:
            if char != "\n":
                out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        else:
            out.append(char)
    return "".join(out)


def _unescape_double(text: str) -> str:
    # Inside double quotes a backslash escapes only $ ` " \ and a newline.
    out, index = [], 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text) and text[index + 1] in '$`"\\\n':
            if text[index + 1] != "\n":
                out.append(text[index + 1])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)
