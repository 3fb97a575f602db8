"""Snapshots of a git work tree for shell calls, without git and without touching the repository.

Before a shell call, every entry under the workspace (``.git`` folders left out: history, index and
refs are the user's and never touched) is ``lstat``-ed; a file whose stat signature (mode, size,
mtime, ctime, inode) is unchanged since the session's last snapshot keeps its recorded digest, any
other file is read and its bytes kept in the private object store. After the call the same walk
gives the new states, and the two snapshots' difference is what the call changed: files created,
modified, renamed (one removed, one created), deleted or chmod'ed, symlinks, folders, untracked and
ignored files alike. Bytes are taken as they are on disk: no clean/smudge filter, no line-ending
conversion, no hook of the user's repository runs (why this is not ``git add`` with a private index).

Bounded: a tree over ``max_files`` entries or ``max_bytes`` of file content is not snapshotted
(``Over``), checked on the stat walk before any file is read.
"""

from __future__ import annotations

import os
import stat
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .states import Objects, state_from

Signature = tuple[int, int, int, int, int]


@dataclass(frozen=True)
class Over:
    """The tree is over a bound: why, in words a user reads."""

    reason: str


def in_git_work_tree(folder: Path) -> bool:
    """True when ``folder`` or a parent holds ``.git`` (a folder, or a file for worktrees/submodules)."""
    return any(os.path.lexists(candidate / ".git") for candidate in (folder, *folder.parents))


def _walk(root: Path, max_files: int, max_bytes: int) -> dict[str, tuple[os.stat_result, str]] | Over:
    # Plain strings, not Path objects: building 20 000 Paths was half of a warm snapshot's time.
    found: dict[str, tuple[os.stat_result, str]] = {}
    total = 0
    stack = [(str(root), "")]
    while stack:
        folder, prefix = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                continue
            rel = prefix + entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[rel] = (info, entry.path)
            if stat.S_ISDIR(info.st_mode):
                stack.append((entry.path, rel + "/"))
                continue
            total += info.st_size if stat.S_ISREG(info.st_mode) else 0
            if len(found) > max_files:
                return Over(f"the work tree holds more than {max_files} files (checkpoint.json max_files)")
            if total > max_bytes:
                mib = max_bytes // (1024 * 1024)
                return Over(f"the work tree holds more than {mib} MiB (checkpoint.json max_mib)")
    return found


def snapshot(
    root: Path, objects: Objects, cache: dict[str, Any], max_files: int, max_bytes: int, seconds: float = 8.0
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]] | Over:
    """(path -> state, the new stat cache) of every entry under ``root``, or ``Over``.

    ``cache`` maps a path to ``[signature..., state]`` from the last snapshot: an entry whose
    signature holds is not read again (its bytes are already kept). A snapshot that has read files
    for ``seconds`` stops (``Over``: the call must answer within the host's 15 s) and leaves what it
    read in ``cache`` (updated in place), so the next one goes on from there.
    """
    walked = _walk(root, max_files, max_bytes)
    if isinstance(walked, Over):
        return walked
    deadline = time.monotonic() + seconds
    states: dict[str, dict[str, Any]] = {}
    fresh: dict[str, Any] = {}
    for count, (rel, (info, path)) in enumerate(walked.items()):
        if count % 64 == 0 and time.monotonic() > deadline:
            cache.update(fresh)
            return Over(
                f"reading the work tree into the store took over {seconds:g} s "
                f"({count} of {len(walked)} entries; a later call goes on from there)"
            )
        signature = [info.st_mode, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_ino]
        known = cache.get(rel)
        if isinstance(known, list) and known[:5] == signature and isinstance(known[5], dict):
            state = known[5]
        else:
            try:
                state = state_from(path, info, objects)
            except OSError:
                continue  # gone or unreadable meanwhile: not part of this snapshot
        if state.get("special"):
            continue
        states[rel] = state
        fresh[rel] = [*signature, state]
    return states, fresh


def changes(before: dict[str, dict[str, Any]], after: dict[str, dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    """path -> (state before, state after) of every path that differs between two snapshots."""
    from .states import ABSENT, same

    found = {}
    for rel in before.keys() | after.keys():
        old, new = before.get(rel, ABSENT), after.get(rel, ABSENT)
        if not same(old, new):
            found[rel] = (old, new)
    return found
