"""One session's checkpoint store: ``data_dir/workspaces/<id>/checkpoints/<session>/``.

- ``objects/``: the bytes of every file state an undo may put back (``states.Objects``);
- ``turns/<N>.json``: what turn N changed, ``{"turn", "files": {path: {"before", "after"}},
  "not_undoable": [...], "undone": bool}``;
- ``tree.json``: the stat cache of the last work-tree snapshot (``tree.snapshot``).

Folders are 0700, files 0600, everything written atomically. One writer: the session's own lock
(held by the core that runs the session) keeps a second core off it, so no lock of its own.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import orjson

from i_protocol import atomic_write_bytes

from .errors import CheckpointError
from .states import Objects

MAX_RECORD_BYTES = 64 * 1024 * 1024


class SessionStore:
    """The checkpoints of one session of one workspace."""

    def __init__(self, state_dir: Path, session: str) -> None:
        self.folder = state_dir / "checkpoints" / session
        self.objects = Objects(self.folder / "objects")
        self._size: int | None = None
        self._cache: dict[str, Any] | None = None

    def _turn_path(self, turn: int) -> Path:
        return self.folder / "turns" / f"{turn}.json"

    def turn(self, turn: int) -> dict[str, Any]:
        """The record of ``turn`` (an empty one when it changed nothing yet)."""
        path = self._turn_path(turn)
        if not path.exists():
            return {"turn": turn, "files": {}, "not_undoable": [], "undone": False}
        return self._read(path)

    def save_turn(self, record: dict[str, Any]) -> None:
        """Write a turn's record (atomically, 0600)."""
        self._write(self._turn_path(record["turn"]), record)

    def turns(self) -> list[int]:
        """The turns with a record, in order."""
        try:
            names = os.listdir(self.folder / "turns")
        except FileNotFoundError:
            return []
        return sorted(int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit())

    def cache(self) -> dict[str, Any]:
        """The last snapshot's stat cache (read once per process; empty when none or unreadable: it is
        derived data, and an entry whose object is gone is read again)."""
        if self._cache is None:
            try:
                found = orjson.loads((self.folder / "tree.json").read_bytes())
            except (OSError, orjson.JSONDecodeError):
                found = {}
            self._cache = found if isinstance(found, dict) else {}
        return self._cache

    def save_cache(self, cache: dict[str, Any]) -> None:
        """Keep the stat cache for the next snapshot."""
        self._cache = cache
        self._write(self.folder / "tree.json", cache, durable=False)

    def size(self) -> int:
        """Bytes the objects hold (counted once per process, then kept up to date)."""
        if self._size is None:
            total = 0
            for folder, _dirs, files in os.walk(self.folder / "objects"):
                for name in files:
                    try:
                        total += os.lstat(os.path.join(folder, name)).st_size
                    except OSError:
                        continue
            self._size = total - self.objects.added
        return self._size + self.objects.added

    def _read(self, path: Path) -> dict[str, Any]:
        try:
            if path.stat().st_size > MAX_RECORD_BYTES:
                raise CheckpointError(f"{path}: checkpoint record over {MAX_RECORD_BYTES} bytes")
            found = orjson.loads(path.read_bytes())
        except (OSError, orjson.JSONDecodeError) as exc:
            raise CheckpointError(f"{path}: checkpoint record cannot be read ({exc})") from None
        if not isinstance(found, dict) or not isinstance(found.get("files"), dict):
            raise CheckpointError(f"{path}: not a checkpoint record")
        return found

    def _write(self, path: Path, value: Any, *, durable: bool = True) -> None:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.folder, 0o700)
        atomic_write_bytes(path, orjson.dumps(value), mode=0o600, durable=durable)
        os.utime(self.folder)  # the store's age for ``prune``


def prune(state_dir: Path, keep_days: int, keep: str) -> list[str]:
    """Remove the stores of sessions untouched for ``keep_days`` (never ``keep``); their names."""
    root = state_dir / "checkpoints"
    limit = time.time() - keep_days * 86400
    removed = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return []
    for entry in entries:
        try:
            old = entry.is_dir(follow_symlinks=False) and entry.stat(follow_symlinks=False).st_mtime < limit
        except OSError:
            continue
        if old and entry.name != keep:
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(entry.name)
    return removed
