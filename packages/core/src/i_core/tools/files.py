"""The file tools: ``read``, ``write`` and ``edit`` (atomic writes, pre-approval snapshots)."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from i_protocol import atomic_write_bytes
from i_protocol.atomic import remove_stale_temporaries

from ..errors import ToolError
from .arguments import Arguments
from .contract import Prepared, Snapshot, ToolContext, ToolResult
from .images import image_mime
from .paths import display, resolve
from .text import plural, printable

DEFAULT_READ_LINES = 2000
MAX_READ_LINES = 100_000
MAX_LINE_CHARS = 2000
BINARY_PROBE_BYTES = 8192
_LINE_CHUNK = 1 << 16


def prepare_read(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``read`` call: ``path``, optional 1-based ``offset`` and ``limit`` in lines."""
    args = Arguments("read", arguments, ("path", "offset", "limit"))
    path = resolve("read", args.string("path"), ctx.workspace)
    offset = args.integer("offset", 1, 1, 2**62)
    limit = args.integer("limit", DEFAULT_READ_LINES, 1, MAX_READ_LINES)
    shown = display(path, ctx.workspace)
    summary = f"read {shown}" if offset == 1 else f"read {shown} from line {offset}"
    return Prepared("read", dict(args.values), summary, path, None, lambda c: _read(path, offset, limit, c))


def _read(path: Path, offset: int, limit: int, ctx: ToolContext) -> ToolResult:
    shown = display(path, ctx.workspace)
    mode = _stat_mode("read", path, shown)
    if mode is None:
        raise ToolError(f"read: {shown}: no such file")
    if stat.S_ISDIR(mode):
        raise ToolError(f"read: {shown}: is a directory; use glob to list its files")
    if not stat.S_ISREG(mode):
        raise ToolError(f"read: {shown}: not a regular file")
    lines: list[str] = []
    used = 0
    last = offset - 1
    more = False
    capped = False
    total = 0
    with open(path, "rb") as handle:
        _refuse_binary("read", shown, handle.read(BINARY_PROBE_BYTES))
        handle.seek(0)
        for number, raw in enumerate(_lines(handle), 1):
            total = number
            if number < offset:
                continue
            if number >= offset + limit:
                more = True
                break
            text = raw.decode("utf-8", "replace").rstrip("\r\n")
            if len(text) > MAX_LINE_CHARS:
                text = text[:MAX_LINE_CHARS] + f" [... line cut at {MAX_LINE_CHARS} characters]"
            entry = f"{number:>6}\t{text}"
            if used + len(entry) + 1 > ctx.max_output_chars:
                more = capped = True
                break
            lines.append(entry)
            used += len(entry) + 1
            last = number
    if not lines and not capped:
        if offset == 1:
            return ToolResult(f"{shown}: (empty file)")
        raise ToolError(f"read: {shown}: offset {offset} is past the end of the file ({total} lines)")
    if more:
        why = f"output cap of {ctx.max_output_chars} characters reached" if capped else f"limit of {limit} lines"
        lines.append(f"[{why}; showing lines {offset}-{last}; continue with offset={last + 1}]")
    return ToolResult("\n".join(lines))


def _lines(handle: BinaryIO) -> Iterator[bytes]:
    # readline with a size bound: a huge single-line file must not be loaded whole for a few lines.
    while True:
        chunk = handle.readline(_LINE_CHUNK)
        if not chunk:
            return
        if not chunk.endswith(b"\n") and len(chunk) == _LINE_CHUNK:
            while True:
                rest = handle.readline(_LINE_CHUNK)
                if not rest or rest.endswith(b"\n"):
                    break
        yield chunk


def prepare_write(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``write`` call (``path``, ``content``) and snapshot the file it would replace."""
    args = Arguments("write", arguments, ("path", "content"))
    path = resolve("write", args.string("path"), ctx.workspace)
    shown = display(path, ctx.workspace)
    data = _encode("write", shown, "content", args.string("content", empty_ok=True))
    target = _write_target(path)
    mode = _stat_mode("write", target, shown)
    if mode is not None and stat.S_ISDIR(mode):
        raise ToolError(f"write: {shown}: is a directory")
    if mode is not None and not stat.S_ISREG(mode):
        raise ToolError(f"write: {shown}: not a regular file")
    snapshot = take_snapshot(target)
    where = destination(path, shown, ctx.workspace)
    if snapshot.exists:
        summary = f"write {where}: overwrite ({snapshot.size} -> {len(data)} bytes)"
    else:
        summary = f"write {where}: create ({len(data)} bytes)"

    def run(c: ToolContext) -> ToolResult:
        current = _unchanged_bytes("write", shown, target, snapshot)
        keep_mode = stat.S_IMODE(os.stat(target).st_mode) if current is not None else None
        atomic_write("write", shown, target, data, keep_mode)
        verb = "overwrote" if snapshot.exists else "created"
        return ToolResult(f"{verb} {shown} ({len(data)} bytes)")

    return Prepared("write", dict(args.values), summary, path, snapshot, run)


def prepare_edit(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate an ``edit`` call (exact ``old_string`` -> ``new_string``) and snapshot the file."""
    args = Arguments("edit", arguments, ("path", "old_string", "new_string", "replace_all"))
    path = resolve("edit", args.string("path"), ctx.workspace)
    shown = display(path, ctx.workspace)
    old_text = args.string("old_string", empty_ok=True)
    new_text = args.string("new_string", empty_ok=True)
    replace_all = args.boolean("replace_all", False)
    if not old_text:
        raise ToolError(f"edit: {shown}: old_string is empty; use write to create or replace a whole file")
    if old_text == new_text:
        raise ToolError(f"edit: {shown}: old_string and new_string are the same; nothing would change")
    old = _encode("edit", shown, "old_string", old_text)
    new = _encode("edit", shown, "new_string", new_text)
    target = _write_target(path)
    data = _existing_text_bytes("edit", shown, target)
    count = data.count(old)
    if count == 0:
        raise ToolError(
            f"edit: {shown}: old_string not found; read the file again and copy the exact text, whitespace included"
        )
    if count > 1 and not replace_all:
        raise ToolError(
            f"edit: {shown}: old_string occurs {count} times; include more surrounding text to make it unique, "
            "or set replace_all to true"
        )
    replaced = count if replace_all else 1
    snapshot = _snapshot_of(target, data)
    summary = f"edit {destination(path, shown, ctx.workspace)}: replace {plural(replaced, 'occurrence')}"

    def run(c: ToolContext) -> ToolResult:
        current = _unchanged_bytes("edit", shown, target, snapshot)
        if current is None:  # pragma: no cover - _unchanged_bytes raises for a vanished file
            raise ToolError(f"edit: {shown}: no such file")
        updated = current.replace(old, new) if replace_all else current.replace(old, new, 1)
        atomic_write("edit", shown, target, updated, stat.S_IMODE(os.stat(target).st_mode))
        return ToolResult(f"edited {shown}: replaced {plural(replaced, 'occurrence')}")

    return Prepared("edit", dict(args.values), summary, path, snapshot, run)


def destination(path: Path, shown: str, workspace: Path) -> str:
    """Where a write to ``path`` lands, for the approval prompt: ``shown``, plus `` -> TARGET`` when
    symlinks (of the file or of a folder on the way) send it elsewhere, plus
    ``(outside the workspace!)`` when the bytes would land outside the workspace."""
    real = Path(os.path.realpath(path))
    # The workspace's own path may run through a symlink (/tmp -> /private/tmp); that is not a redirect.
    real_workspace = Path(os.path.realpath(workspace))
    real_shown = display(real, real_workspace)
    where = shown if real_shown == shown else f"{shown} -> {real_shown}"
    if not real.is_relative_to(real_workspace):
        where += " (outside the workspace!)"
    return where


def take_snapshot(path: Path) -> Snapshot:
    """The file's digest, size and mtime now (``exists`` False when there is no file)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return Snapshot(exists=False)
    return _snapshot_of(path, data)


def _snapshot_of(path: Path, data: bytes) -> Snapshot:
    info = os.stat(path)
    return Snapshot(True, hashlib.sha256(data).hexdigest(), len(data), info.st_mtime_ns)


def _unchanged_bytes(tool: str, shown: str, target: Path, snapshot: Snapshot) -> bytes | None:
    """The file's current bytes, if its content still matches the approved snapshot; else ToolError."""
    try:
        with open(target, "rb") as handle:
            current: bytes | None = handle.read()
    except FileNotFoundError:
        current = None
    # The content decides: a touch that leaves the bytes equal does not change what was approved.
    same = (
        (current is None)
        if not snapshot.exists
        else (current is not None and hashlib.sha256(current).hexdigest() == snapshot.digest)
    )
    if not same:
        raise ToolError(f"{tool}: {shown}: changed on disk since it was shown for approval; read it again")
    return current


def atomic_write(tool: str, shown: str, target: Path, data: bytes, keep_mode: int | None) -> None:
    """Replace ``target`` with ``data`` (temp file + fsync + rename), creating parent folders."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"{tool}: {shown}: a parent of this path is a file, not a folder")
    # A killed earlier write of this very file may have left its temporary: only that one is ours to remove.
    remove_stale_temporaries(target.parent, targets={target.name})
    # A new file gets 0o666 less the umask, as any editor would; an existing one keeps its mode.
    atomic_write_bytes(target, data, mode=0o666 if keep_mode is None else keep_mode, exact_mode=keep_mode is not None)


def _write_target(path: Path) -> Path:
    # Writing through a symlink replaces the file it points to, not the link itself.
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def _existing_text_bytes(tool: str, shown: str, path: Path) -> bytes:
    mode = _stat_mode(tool, path, shown)
    if mode is None:
        raise ToolError(f"{tool}: {shown}: no such file")
    if stat.S_ISDIR(mode):
        raise ToolError(f"{tool}: {shown}: is a directory")
    if not stat.S_ISREG(mode):
        raise ToolError(f"{tool}: {shown}: not a regular file")
    with open(path, "rb") as handle:
        data = handle.read()
    _refuse_binary(tool, shown, data[:BINARY_PROBE_BYTES])
    return data


def _refuse_binary(tool: str, shown: str, head: bytes) -> None:
    if b"\x00" not in head and image_mime(head) is None:
        return
    hint = "; use view_image to look at it" if image_mime(head) else ""
    raise ToolError(f"{tool}: {shown}: binary file, not text{hint}")


def _stat_mode(tool: str, path: Path, shown: str) -> int | None:
    try:
        return os.stat(path).st_mode
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise ToolError(f"{tool}: {shown}: a parent of this path is a file, not a folder")
    except PermissionError:
        raise ToolError(f"{tool}: {shown}: permission denied")


def _encode(tool: str, shown: str, key: str, text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = printable(text[exc.start : exc.end])
        raise ToolError(f"{tool}: {shown}: {key} is not valid Unicode (lone surrogate {bad} at index {exc.start})")
