"""The bounded directory walk behind ``glob`` and ``search``, with its skip rules."""

from __future__ import annotations

import os
from collections.abc import Iterator

from .text import plural

MAX_WALK_FILES = 10_000
MAX_ENTRIES = 20_000
# Hidden names (leading dot) are skipped anyway; these are the visible build and dependency folders.
SKIP_DIRS = frozenset(
    {"node_modules", "bower_components", "target", "build", "dist", "__pycache__", "venv", "site-packages"}
)


def skipped_dir(name: str) -> bool:
    """Whether the walk leaves out a folder of this name (hidden, build or dependency folder)."""
    return name.startswith(".") or name in SKIP_DIRS or name.endswith(".egg-info")


class Walk:
    """Regular files under ``root`` in sorted depth-first order, at most ``max_files`` of them.

    Hidden entries, build folders and symlinks are skipped; ``truncated`` tells whether the limit
    stopped the walk; unreadable folders are counted in ``unreadable`` and skipped.
    """

    def __init__(self, root: str, max_files: int = MAX_WALK_FILES) -> None:
        self.root = root
        self.max_files = max_files
        self.files_walked = 0
        self.truncated = False
        self.unreadable = 0

    def files(self) -> Iterator[tuple[str, os.DirEntry[str]]]:
        """Yield ``(path relative to root with '/' separators, entry)`` for each file walked."""
        stack: list[tuple[str, str]] = [(self.root, "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as listing:
                    entries = sorted(listing, key=lambda entry: entry.name)
            except OSError:
                self.unreadable += 1
                continue
            subfolders: list[tuple[str, str]] = []
            for entry in entries:
                name = entry.name
                if name.startswith("."):
                    continue
                try:
                    if entry.is_symlink():
                        continue
                    if entry.is_dir(follow_symlinks=False):
                        if not skipped_dir(name):
                            subfolders.append((entry.path, f"{prefix}{name}/"))
                        continue
                    if not entry.is_file(follow_symlinks=False):
                        continue
                except OSError:
                    continue
                if self.files_walked >= self.max_files:
                    self.truncated = True
                    return
                self.files_walked += 1
                yield prefix + name, entry
            stack.extend(reversed(subfolders))


def limit_notes(walk: Walk, truncated_entries: bool) -> list[str]:
    """The lines that tell the model a walk or its results were cut short."""
    notes: list[str] = []
    if walk.truncated:
        notes.append(f"[walk stopped after {walk.max_files} files; results are incomplete, narrow the path or pattern]")
    if truncated_entries:
        notes.append(f"[stopped at {MAX_ENTRIES} results; narrow the path or pattern]")
    if walk.unreadable:
        notes.append(f"[{plural(walk.unreadable, 'folder')} could not be read]")
    return notes
