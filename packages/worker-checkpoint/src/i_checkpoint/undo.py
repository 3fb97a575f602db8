"""The ``undo`` event: put every file a turn (and each later turn) changed back as it was before.

Per path, the state before the first recorded change and the state the last one left are
compared with the path's state now: equal to what the turns left, it is restored (``restore`` in a
dry run, ``restored``); equal to the state before, there is nothing to do (not listed); anything
else means someone changed it since: ``conflict``, kept as it is. A turn undone once is marked;
undoing it again is refused (no redo), and later undos of earlier turns skip it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from i_protocol.checkpoint import UndoAnswer, UndoFile, UndoRequest

from .errors import CheckpointError
from .states import put, same, state_of
from .store import SessionStore


def undo(request: UndoRequest, root: Path, store: SessionStore) -> UndoAnswer:
    """Plan (``dry_run``) or apply the undo of ``request.turn`` and every later turn."""
    records = [store.turn(turn) for turn in store.turns() if turn >= request.turn]
    first = next((record for record in records if record["turn"] == request.turn), None)
    if first is not None and first.get("undone"):
        raise CheckpointError(f"turn {request.turn} was undone already; an undo cannot be undone (no redo)")
    records = [record for record in records if not record.get("undone")]
    plan = _plan(records, root, store)
    notes = tuple(f"turn {record['turn']}: {note}" for record in records for note in record["not_undoable"])
    turns = tuple(record["turn"] for record in records)
    if request.dry_run:
        return UndoAnswer(request.session, request.turn, True, turns, tuple(plan), notes)
    done = tuple(_apply(plan, root, store))
    for record in records:
        record["undone"] = True
        store.save_turn(record)
    return UndoAnswer(request.session, request.turn, False, turns, done, notes, applied=True)


def _plan(records: list[dict[str, Any]], root: Path, store: SessionStore) -> list[UndoFile]:
    first: dict[str, dict[str, Any]] = {}
    last: dict[str, dict[str, Any]] = {}
    for record in records:
        for rel, change in record["files"].items():
            first.setdefault(rel, change["before"])
            last[rel] = change["after"]
    plan = []
    for rel in sorted(first):
        before, after = first[rel], last[rel]
        path = _inside(root, rel)
        current = state_of(path) if path is not None else {"kind": "absent"}
        if path is None:
            plan.append(UndoFile(rel, "refused", before, after, current, "not inside the workspace"))
        elif same(current, before):
            continue
        elif not same(current, after):
            plan.append(UndoFile(rel, "conflict", before, after, current, "changed since the turn: kept as it is"))
        elif before["kind"] == "file" and not store.objects.has(before["sha256"]):
            plan.append(UndoFile(rel, "refused", before, after, current, "its earlier bytes are gone from the store"))
        else:
            plan.append(UndoFile(rel, "restore", before, after, current))
    return plan


def _apply(plan: list[UndoFile], root: Path, store: SessionStore) -> list[UndoFile]:
    """Restore every ``restore`` entry: folders first (shallow to deep), then files and links, then
    removals (deep to shallow, so a folder the turn made goes after what it held)."""
    todo = [item for item in plan if item.status == "restore"]

    def depth(item: UndoFile) -> int:
        return item.path.count("/")

    makes = sorted((i for i in todo if i.before["kind"] == "dir"), key=depth)
    writes = [i for i in todo if i.before["kind"] in ("file", "symlink")]
    removals = sorted((i for i in todo if i.before["kind"] == "absent"), key=depth, reverse=True)
    done: dict[str, UndoFile] = {}
    for item in [*makes, *writes, *removals]:
        path = root / item.path
        try:
            put(path, item.before, store.objects)
        except OSError as exc:
            done[item.path] = UndoFile(
                item.path, "refused", item.before, item.after, state_of(path), f"cannot restore: {exc.strerror or exc}"
            )
            continue
        done[item.path] = UndoFile(item.path, "restored", item.before, item.after, state_of(path))
    return [done.get(item.path, item) for item in plan]


def _inside(root: Path, rel: str) -> Path | None:
    """``root/rel`` when it stays inside ``root`` with no symlinked parent leading out; else None."""
    parts = rel.split("/")
    if os.path.isabs(rel) or ".." in parts or "" in parts or parts[0] == ".git":
        return None
    path = root.joinpath(*parts)
    parent = os.path.realpath(path.parent)
    real_root = os.path.realpath(root)
    if parent != real_root and not parent.startswith(real_root + os.sep):
        return None
    return path
