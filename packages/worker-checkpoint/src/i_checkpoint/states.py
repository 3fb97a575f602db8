"""File states: what a path is (absent, a file with its digest and mode, a symlink, a folder), and the
private object store that keeps the bytes of every file state an undo may have to put back.

A state is plain JSON (``i_protocol.checkpoint``): ``{"kind":"absent"}``, ``{"kind":"file","sha256",
"mode"}``, ``{"kind":"symlink","target"}``, ``{"kind":"dir","mode"}``. Objects are named by their
SHA-256, written atomically with mode 0600 in a 0700 folder, and never leave this machine.
"""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path
from typing import Any

from i_protocol import atomic_write_bytes

ABSENT: dict[str, Any] = {"kind": "absent"}


class Objects:
    """Content-addressed bytes under ``folder`` (one file per SHA-256), with a running size."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._made: set[str] = set()
        self.added = 0
        """Bytes written by this process (the store's bound counts them)."""

    def path(self, digest: str) -> Path:
        """Where the object ``digest`` lives."""
        return self.folder / digest[:2] / digest[2:]

    def keep(self, data: bytes) -> str:
        """Store ``data`` (once) and return its SHA-256."""
        digest = hashlib.sha256(data).hexdigest()
        target = self.path(digest)
        if target.exists():
            return digest
        if digest[:2] not in self._made:
            target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._made.add(digest[:2])
        # No temporary and rename per object (the first snapshot writes thousands): a torn object is
        # found by its digest when read (``read``), and written again by the next ``keep``.
        try:
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return digest
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        self.added += len(data)
        return digest

    def read(self, digest: str) -> bytes:
        """The bytes of ``digest``; an OSError when they are gone or torn."""
        data = self.path(digest).read_bytes()
        if hashlib.sha256(data).hexdigest() != digest:
            raise OSError(f"the kept bytes of {digest[:12]} are damaged")
        return data

    def has(self, digest: str) -> bool:
        """True when the bytes of ``digest`` are kept whole."""
        try:
            return hashlib.sha256(self.path(digest).read_bytes()).hexdigest() == digest
        except OSError:
            return False


def state_of(path: Path, objects: Objects | None = None) -> dict[str, Any]:
    """The state of ``path`` now (no symlink followed); a file's bytes go into ``objects`` when given."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return dict(ABSENT)
    except NotADirectoryError:
        return dict(ABSENT)
    return state_from(path, info, objects)


def state_from(path: str | Path, info: os.stat_result, objects: Objects | None) -> dict[str, Any]:
    """The state of ``path`` whose ``lstat`` is ``info``."""
    if stat.S_ISLNK(info.st_mode):
        return {"kind": "symlink", "target": os.readlink(path)}
    if stat.S_ISDIR(info.st_mode):
        return {"kind": "dir", "mode": stat.S_IMODE(info.st_mode)}
    if not stat.S_ISREG(info.st_mode):
        return {"kind": "absent", "special": True}  # a fifo or socket: never recorded nor restored
    with open(path, "rb") as handle:
        data = handle.read()
    digest = objects.keep(data) if objects is not None else hashlib.sha256(data).hexdigest()
    return {"kind": "file", "sha256": digest, "mode": stat.S_IMODE(info.st_mode)}


def same(one: dict[str, Any], other: dict[str, Any]) -> bool:
    """True when two states describe the same thing (kind, bytes, mode, target)."""
    keys = ("kind", "sha256", "mode", "target")
    return all(one.get(key) == other.get(key) for key in keys)


def put(path: Path, state: dict[str, Any], objects: Objects) -> None:
    """Make ``path`` be ``state`` (a folder is created, never removed here; see ``restore``)."""
    kind = state["kind"]
    if kind == "dir":
        if not path.is_dir() or path.is_symlink():
            remove(path)
            path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, state["mode"])
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if kind == "absent":
        remove(path)
    elif kind == "symlink":
        remove(path)
        os.symlink(state["target"], path)
    else:
        if path.is_symlink() or path.is_dir():
            remove(path)
        atomic_write_bytes(path, objects.read(state["sha256"]), mode=state["mode"], exact_mode=True, durable=False)


def remove(path: Path) -> None:
    """Remove a file or symlink at ``path``, or an empty folder; nothing when absent."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        os.rmdir(path)  # only when empty: what the user put in it stays
    else:
        os.unlink(path)
