"""Glob patterns (``*``, ``?``, ``[...]``, ``**``) and the ``glob`` tool."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from ..errors import ToolError
from .arguments import Arguments
from .contract import DeadlineRunner, Prepared, ToolContext, ToolResult, seconds_text
from .paths import display, resolve
from .text import cut_tail, printable
from .walk import MAX_ENTRIES, Walk, limit_notes

_MAGIC = re.compile(r"[*?\[]")


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching '/'-separated relative paths against ``pattern`` (``**`` spans folders).

    The regex cannot backtrack catastrophically (``*a*a*a*a*a*a*a*a*b`` against a long name of
    ``a``s took 33 s with the plain ``[^/]*`` translation). A glob is a sequence of fixed-width
    pieces separated by stars, so the leftmost place each middle piece fits is always a right
    choice: each one is matched lazily inside an atomic group ``(?>[^/]*?PIECE)`` and never
    retried, as ``fnmatch.translate`` does. ``**`` is the same star one level up, over folders.
    """
    parts: list[str] = []
    for part in pattern.split("/"):
        if part == "**" and parts and parts[-1] == "**":
            continue  # **/** is **
        parts.append(part)
    out: list[str] = []
    atomic = False
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part != "**":
            out.append(_segment(part) + ("" if last else "/"))
            continue
        if atomic:
            out.append(")")
            atomic = False
        if last:
            out.append("(?:[^/]++/)*[^/]+")
        elif "**" in parts[index + 1 :]:
            out.append("(?>(?:[^/]++/)*?")  # closed at the next **: the leftmost folders where the piece fits
            atomic = True
        else:
            out.append("(?:[^/]++/)*")
    return re.compile("".join(out), re.DOTALL)


def _segment(part: str) -> str:
    # Pieces between stars: pieces[0] is anchored at the start, pieces[-1] at the end, the rest float.
    pieces: list[list[str]] = [[]]
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            while index < len(part) and part[index] == "*":
                index += 1
            pieces.append([])
        elif char == "?":
            pieces[-1].append("[^/]")
        elif char == "[":
            end = part.find("]", index + 1 if part[index : index + 1] in ("!", "]") else index)
            if end < 0:
                pieces[-1].append(re.escape(char))
                continue
            body = part[index:end]
            index = end + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("[", "\\[").replace("/", "")
            pieces[-1].append(f"[{'^/' if negate else ''}{body}]" if body else "(?!)")
        else:
            pieces[-1].append(re.escape(char))
    if len(pieces) == 1:
        return "".join(pieces[0])
    middle = "".join(f"(?>[^/]*?{''.join(piece)})" for piece in pieces[1:-1])
    return "".join(pieces[0]) + middle + "[^/]*" + "".join(pieces[-1])


def split_pattern(pattern: str) -> tuple[str, str]:
    """``(literal folder prefix, rest)``: the walk starts at the prefix so it may name a hidden folder."""
    parts = pattern.split("/")
    literal: list[str] = []
    for part in parts[:-1]:
        if _MAGIC.search(part) or part == "**":
            break
        literal.append(part)
    rest = "/".join(parts[len(literal) :])
    prefix = "/".join(literal)
    if pattern.startswith("/") and not prefix:
        prefix = "/"
    return prefix, rest


def prepare_glob(arguments: object, ctx: ToolContext, within: DeadlineRunner) -> Prepared:
    """Validate a ``glob`` call: ``pattern`` relative to the workspace (or to the optional ``path``);
    it will run under ``within`` (its deadline)."""
    args = Arguments("glob", arguments, ("pattern", "path"))
    pattern = args.string("pattern")
    base_raw = args.optional_string("path") or "."
    if "\x00" in pattern:
        raise ToolError("glob: pattern contains a NUL character")
    prefix, rest = split_pattern(pattern)
    base = resolve("glob", base_raw, ctx.workspace)
    root = resolve("glob", os.path.join(str(base), prefix) if prefix else str(base), ctx.workspace)
    summary = f"glob {printable(pattern)} in {display(base, ctx.workspace)}"
    values = dict(args.values)

    def run(c: ToolContext) -> ToolResult:
        return within("glob", values, c, lambda: _glob(pattern, root, rest, c), lambda: _expired(c))

    return Prepared("glob", values, summary, base, None, run)


def _expired(ctx: ToolContext) -> str:
    # The matcher is linear; what can still take this long is a huge or slow (network) folder tree.
    return (
        f"glob: the walk did not finish within {seconds_text(ctx.pattern_deadline)} s; "
        "narrow the path or the pattern's leading folders"
    )


def _glob(pattern: str, root: Path, rest: str, ctx: ToolContext) -> ToolResult:
    shown = display(root, ctx.workspace)
    try:
        mode = os.stat(root).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return ToolResult(f"no files match {printable(pattern)} ({shown} does not exist)")
    if not stat.S_ISDIR(mode):
        raise ToolError(f"glob: {shown}: not a directory")
    if not _MAGIC.search(rest) and "**" not in rest.split("/"):
        # A literal name: the file either exists or not; skip rules do not apply to what was named.
        candidate = root / rest
        if candidate.is_file():
            return ToolResult(display(candidate, ctx.workspace))
        return ToolResult(f"no files match {printable(pattern)}")
    matcher = compile_glob(rest)
    walk = Walk(str(root))
    found: list[str] = []
    truncated_entries = False
    for relative, entry in walk.files():
        if matcher.fullmatch(relative):
            if len(found) >= MAX_ENTRIES:
                truncated_entries = True
                break
            found.append(display(Path(entry.path), ctx.workspace))
    found.sort()
    notes = limit_notes(walk, truncated_entries)
    if not found:
        return ToolResult("\n".join([f"no files match {printable(pattern)}", *notes]))
    text = "\n".join([*found, *notes])
    return ToolResult(cut_tail(text, ctx.max_output_chars))
