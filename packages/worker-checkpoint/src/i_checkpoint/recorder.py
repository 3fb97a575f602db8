"""What a turn changes, recorded around each tool call (``before_tool`` / ``after_tool``).

- ``write`` / ``edit``: the named file's state before the call (bytes kept) and after it.
- ``shell`` in a git work tree: a snapshot of the workspace before and after (``tree``); every
  difference is recorded. Over the bound, or outside a git work tree, the call is not undoable and
  the ``before_tool`` answer says so (``notice``) before it runs.
- read-only built-ins: nothing. Any other tool: its effects are not recorded (said in the turn).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .settings import Settings
from .states import ABSENT, same, state_of
from .store import SessionStore
from .tree import Over, changes, in_git_work_tree, snapshot

READ_ONLY = frozenset({"read", "glob", "search", "view_image", "recall"})
FILE_TOOLS = frozenset({"write", "edit"})
NEVER = (
    "never undoable: files outside the workspace, .git (commits, index, refs), the network, databases, "
    "git push and submodule remotes"
)


@dataclass
class Pending:
    """What ``before_tool`` kept for the call's ``after_tool``."""

    store: SessionStore
    turn: int
    root: Path
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    """path -> state before the call (write/edit)."""
    tree: dict[str, dict[str, Any]] | None = None
    """The work tree's snapshot before a shell call."""


def before(
    name: str, arguments: str, root: Path, store: SessionStore, turn: int, settings: Settings
) -> tuple[Pending | None, str | None]:
    """Record what the call may change; (what ``after`` needs, a notice for the user or None)."""
    if name in READ_ONLY:
        return None, None
    record = store.turn(turn)
    if store.size() > settings.max_store_bytes:
        note = f"{name}: not undoable: the session's checkpoint store is over {settings.max_store_mib} MiB"
        _note(store, record, note)
        return None, note
    if name in FILE_TOOLS:
        return _before_file(name, arguments, root, store, record)
    if name == "shell":
        return _before_shell(root, store, record, settings)
    _note(store, record, f"{name}: the effects of this tool are not recorded")
    return None, None


def _before_file(
    name: str, arguments: str, root: Path, store: SessionStore, record: dict[str, Any]
) -> tuple[Pending | None, str | None]:
    try:
        raw = orjson.loads(arguments).get("path")
    except (orjson.JSONDecodeError, AttributeError):
        return None, None  # the core refuses the call itself
    if not isinstance(raw, str) or not raw or "\x00" in raw:
        return None, None
    path = Path(os.path.normpath(raw if os.path.isabs(raw) else root / raw))
    rel = relative(path, root)
    if rel is None:
        note = f"{name} {raw}: not undoable: the file is outside the workspace (or in .git)"
        _note(store, record, note)
        return None, note
    pending = Pending(store, record["turn"], root)
    pending.files[rel] = state_of(path, store.objects)
    parent = path.parent
    while parent != root and not os.path.lexists(parent):  # folders the write will create
        pending.files[Path(os.path.relpath(parent, root)).as_posix()] = dict(ABSENT)
        parent = parent.parent
    return pending, None


def _before_shell(
    root: Path, store: SessionStore, record: dict[str, Any], settings: Settings
) -> tuple[Pending | None, str | None]:
    if not in_git_work_tree(root):
        note = (
            "shell: not undoable: the workspace is not in a git work tree, so what the command changes is not recorded"
        )
        _note(store, record, note)
        return None, note
    cache = store.cache()
    taken = snapshot(root, store.objects, cache, settings.max_files, settings.max_bytes, settings.max_seconds)
    if isinstance(taken, Over):
        store.save_cache(cache)  # what a stopped snapshot read is kept for the next one
        note = f"shell: not undoable: {taken.reason}"
        _note(store, record, note)
        return None, note
    states, cache = taken
    store.save_cache(cache)
    if NEVER not in record["not_undoable"]:
        _note(store, record, NEVER)
    return Pending(store, record["turn"], root, tree=states), None


def after(pending: Pending, settings: Settings) -> None:
    """Record what the call changed (``pending`` from ``before``)."""
    store = pending.store
    record = store.turn(pending.turn)
    if pending.tree is None:
        changed = {rel: (old, state_of(pending.root / rel)) for rel, old in pending.files.items()}
    else:
        cache = store.cache()
        taken = snapshot(
            pending.root, store.objects, cache, settings.max_files, settings.max_bytes, settings.max_seconds
        )
        if isinstance(taken, Over):
            _note(store, record, f"shell: not undoable: after the command, {taken.reason}")
            return
        states, cache = taken
        store.save_cache(cache)
        changed = changes(pending.tree, states)
    files = record["files"]
    for rel, (old, new) in sorted(changed.items()):
        if rel in files:
            files[rel]["after"] = new
        elif not same(old, new):
            files[rel] = {"before": old, "after": new}
    store.save_turn(record)


def _note(store: SessionStore, record: dict[str, Any], note: str) -> None:
    if note not in record["not_undoable"]:
        record["not_undoable"].append(note)
        store.save_turn(record)


def relative(path: Path, root: Path) -> str | None:
    """``path`` relative to ``root`` (posix), or None when it is outside or is ``root`` itself."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    text = rel.as_posix()
    if text in ("", ".") or text.split("/")[0] == ".git":
        return None
    return text


__all__ = ["ABSENT", "NEVER", "Pending", "after", "before", "relative"]
