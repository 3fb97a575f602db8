"""The ``search`` tool: regex or literal text search over the workspace, as ``path:line: snippet``."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from i_protocol.errors import FileTooLarge
from i_protocol.files import read_bytes

from ..errors import ToolError
from .arguments import Arguments
from .contract import DeadlineRunner, Prepared, ToolContext, ToolResult, seconds_text
from .globbing import compile_glob
from .paths import display, resolve
from .text import cut_tail, plural, printable
from .walk import MAX_ENTRIES, Walk, limit_notes

MAX_FILE_BYTES = 1024 * 1024
BINARY_PROBE_BYTES = 8192
SNIPPET_CHARS = 240
# A whole-file pre-check may only be skipped for patterns whose per-line meaning it could miss.
_NO_PRECHECK = re.compile(r"\\[AZz]|\(\?<?!|\(\?\(")


@dataclass(frozen=True)
class _Query:
    line: re.Pattern[str]
    whole: re.Pattern[str] | None
    literal: bytes | None
    glob: re.Pattern[str] | None
    glob_on_name: bool


class _Progress:
    """Where a search is, for the message when its deadline stops it."""

    def __init__(self) -> None:
        self.file: str | None = None
        self.walk: Walk | None = None

    def expired(self, ctx: ToolContext) -> str:
        where = ""
        if self.file is not None:
            walked = self.walk.files_walked if self.walk is not None else 1
            where = f" (stopped while searching {self.file}, {plural(walked, 'file')} walked)"
        return (
            f"search: the pattern did not finish within {seconds_text(ctx.pattern_deadline)} s "
            f"(catastrophic backtracking?); simplify it, or narrow the path{where}"
        )


def prepare_search(arguments: object, ctx: ToolContext, within: DeadlineRunner) -> Prepared:
    """Validate a ``search`` call: ``pattern`` plus optional ``path``, ``glob``, ``regex``, ``case_sensitive``;
    it will run under ``within`` (its deadline)."""
    args = Arguments("search", arguments, ("pattern", "path", "glob", "regex", "case_sensitive"))
    pattern = args.string("pattern")
    use_regex = args.boolean("regex", True)
    case_sensitive = args.boolean("case_sensitive", True)
    glob = args.optional_string("glob")
    root = resolve("search", args.optional_string("path") or ".", ctx.workspace)
    query = _query(pattern, use_regex, case_sensitive, glob)
    summary = f"search {printable(pattern)!r} in {display(root, ctx.workspace)}" + (
        f" ({printable(glob)})" if glob else ""
    )
    values = dict(args.values)

    def run(c: ToolContext) -> ToolResult:
        # The deadline covers the whole call: the walk, the whole-file pre-check and every line.
        progress = _Progress()
        return within(
            "search", values, c, lambda: _search(pattern, root, query, c, progress), lambda: progress.expired(c)
        )

    return Prepared("search", values, summary, root, None, run)


def _query(pattern: str, use_regex: bool, case_sensitive: bool, glob: str | None) -> _Query:
    flags = 0 if case_sensitive else re.IGNORECASE
    source = pattern if use_regex else re.escape(pattern)
    try:
        line = re.compile(source, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        raise ToolError(
            f"search: invalid regex {printable(pattern)!r}: {exc}; pass regex: false to search for the literal text"
        )
    whole = None if use_regex and _NO_PRECHECK.search(pattern) else re.compile(source, flags | re.MULTILINE)
    literal = None
    if not use_regex and case_sensitive:
        try:
            literal = pattern.encode("utf-8")
        except UnicodeEncodeError:
            literal = None
    glob_re = compile_glob(glob) if glob else None
    return _Query(line, whole, literal, glob_re, glob is not None and "/" not in glob)


def _search(pattern: str, root: Path, query: _Query, ctx: ToolContext, progress: _Progress) -> ToolResult:
    shown_root = display(root, ctx.workspace)
    try:
        mode = os.stat(root).st_mode
    except (FileNotFoundError, NotADirectoryError):
        raise ToolError(f"search: {shown_root}: no such file or directory")
    results: list[str] = []
    if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
        raise ToolError(f"search: {shown_root}: not a regular file or directory")
    if stat.S_ISREG(mode):
        # One named file: searched even if hidden; binary and oversized files still are not.
        progress.file = shown_root
        _search_file(str(root), shown_root, query, results, MAX_ENTRIES)
        return _answer(pattern, shown_root, results, 1, [], ctx)
    walk = progress.walk = Walk(str(root))
    prefix = "" if shown_root == "." else shown_root.rstrip("/") + "/"
    full = False
    for relative, entry in walk.files():
        if query.glob is not None:
            target = entry.name if query.glob_on_name else relative
            if not query.glob.fullmatch(target):
                continue
        shown = progress.file = prefix + printable(relative)
        if not _search_file(entry.path, shown, query, results, MAX_ENTRIES):
            full = True
            break
    return _answer(pattern, shown_root, results, walk.files_walked, limit_notes(walk, full), ctx)


def _search_file(path: str, shown: str, query: _Query, results: list[str], limit: int) -> bool:
    """Append this file's matching lines to ``results``; False once ``limit`` entries are reached."""
    try:
        if os.stat(path).st_size > MAX_FILE_BYTES:
            return True
        data = read_bytes(path, MAX_FILE_BYTES)
    except (OSError, FileTooLarge):  # unreadable, or grown past the limit since the stat: skipped
        return True
    if b"\x00" in data[:BINARY_PROBE_BYTES]:
        return True
    if query.literal is not None and query.literal not in data:
        return True
    text = data.decode("utf-8", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n")
    if query.whole is not None and not query.whole.search(text):
        return True
    search = query.line.search
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final newline ends the last line; it does not start an empty one
    for number, line in enumerate(lines, 1):
        found = search(line)
        if found is None:
            continue
        if len(results) >= limit:
            return False
        results.append(f"{shown}:{number}: {_snippet(line, found.start())}")
    return True


def _snippet(line: str, start: int) -> str:
    if len(line) <= SNIPPET_CHARS:
        return line.strip()
    begin = max(0, start - SNIPPET_CHARS // 4)
    piece = line[begin : begin + SNIPPET_CHARS].strip()
    return ("..." if begin else "") + piece + "..."


def _answer(
    pattern: str, shown_root: str, results: list[str], walked: int, notes: list[str], ctx: ToolContext
) -> ToolResult:
    if not results:
        lines = [f"no matches for {printable(pattern)!r} in {shown_root} ({plural(walked, 'file')} walked)", *notes]
        return ToolResult("\n".join(lines))
    return ToolResult(cut_tail("\n".join([*results, *notes]), ctx.max_output_chars))
