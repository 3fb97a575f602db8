"""Glob patterns (``*``, ``?``, ``[...]``, ``**``) and the ``glob`` tool."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

from .arguments import Arguments
from .contract import Prepared, ToolContext, ToolError, ToolResult
from .paths import display, resolve
from .text import cut_tail, printable
from .walk import MAX_ENTRIES, Walk, limit_notes

_MAGIC = re.compile(r"[*?\[]")


def compile_glob(pattern: str) -> re.Pattern[str]:
    """A regex matching '/'-separated relative paths against ``pattern`` (``**`` spans folders)."""
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            out.append("(?:[^/]+/)*[^/]+" if last else "(?:[^/]+/)*")
            continue
        out.append(_segment(part) + ("" if last else "/"))
    return re.compile("".join(out), re.DOTALL)


def _segment(part: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(part):
        char = part[index]
        index += 1
        if char == "*":
            while index < len(part) and part[index] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = part.find("]", index + 1 if part[index : index + 1] in ("!", "]") else index)
            if end < 0:
                out.append(re.escape(char))
                continue
            body = part[index:end]
            index = end + 1
            negate = body.startswith("!")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("[", "\\[").replace("/", "")
            out.append(f"[{'^/' if negate else ''}{body}]" if body else "(?!)")
        else:
            out.append(re.escape(char))
    return "".join(out)


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


def prepare_glob(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``glob`` call: ``pattern`` relative to the workspace (or to the optional ``path``)."""
    args = Arguments("glob", arguments, ("pattern", "path"))
    pattern = args.string("pattern")
    base_raw = args.optional_string("path") or "."
    if "\x00" in pattern:
        raise ToolError("glob: pattern contains a NUL character")
    prefix, rest = split_pattern(pattern)
    base = resolve("glob", base_raw, ctx.workspace)
    root = resolve("glob", os.path.join(str(base), prefix) if prefix else str(base), ctx.workspace)
    summary = f"glob {printable(pattern)} in {display(base, ctx.workspace)}"
    return Prepared("glob", dict(args.values), summary, base, None, lambda c: _glob(pattern, root, rest, c))


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
