"""The per-workspace memory file ``<state_dir>/memory.json``: locked, atomically replaced, bounded.

Readers take no lock (an atomic replace shows them the old or the new file, never a mix); each
change takes the lock once, re-reads, and writes once. A file that cannot be read as memory is
never overwritten: it is moved aside to ``memory.json.corrupt-<UTC timestamp>`` and memory stays
unavailable (quarantined) until a person repairs or removes that file.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from i_protocol.errors import FileDecodeError, FileTooLarge, LockTimeout
from i_protocol.files import CORRUPT_INFIX, LockedFile, locked_update, read_json, set_aside

from .entry import quote
from .errors import MemoryStoreError
from .settings import Limits

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

STATE_NAME = "memory.json"
CORRUPT_PREFIX = STATE_NAME + CORRUPT_INFIX
FORMAT_VERSION = 1
MAX_FILE_BYTES = 16 * 1024 * 1024
"""Read limit; far above what the largest allowed limits can produce, so a bigger file is not ours."""
LOCK_TIMEOUT_S = 10.0


def total_bytes(entries: dict[str, str]) -> int:
    """Size of the memory as counted against ``max_total_bytes``: UTF-8 bytes of keys plus values."""
    return sum(len(key.encode("utf-8")) + len(value.encode("utf-8")) for key, value in entries.items())


@dataclass(frozen=True)
class Change:
    """What a write did: ``created``, ``updated``, ``unchanged`` or ``deleted``, and the memory after it."""

    status: str
    entries: dict[str, str]


class _Unreadable(Exception):
    """The file exists but is not a memory document; the message says why."""


class MemoryStore:
    """The memory of one workspace, kept in ``state_dir/memory.json``."""

    def __init__(self, state_dir: Path, limits: Limits) -> None:
        self.state_dir = state_dir
        self.path = state_dir / STATE_NAME
        self.limits = limits

    # -- reading ------------------------------------------------------------------------

    def entries(self) -> dict[str, str]:
        """The current entries (no lock); a corrupt file is quarantined and reported."""
        try:
            return self._load()[1]
        except _Unreadable:
            # Move it aside only under the lock, after a second look: a writer may have fixed it.
            with self._locked():
                return self._load_or_quarantine()[1]

    def _load(self) -> tuple[dict[str, Any], dict[str, str]]:
        try:
            document = read_json(self.path, MAX_FILE_BYTES)
        except FileNotFoundError:
            self._refuse_if_quarantined()
            return {}, {}
        except OSError as exc:
            raise MemoryStoreError(f"{self.path}: cannot read memory: {exc.strerror or exc}") from None
        except FileTooLarge:
            raise _Unreadable(f"it is larger than the {MAX_FILE_BYTES}-byte read limit") from None
        except FileDecodeError as exc:
            raise _Unreadable(f"it is not valid UTF-8 JSON ({exc.reason})") from None
        if not isinstance(document, dict):
            raise _Unreadable(f"it holds a JSON {type(document).__name__}, not an object")
        version = document.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT_VERSION:
            # Not corrupt: written by a newer worker. Leave it alone and say what to do.
            raise MemoryStoreError(
                f"{self.path}: memory format version {version} is newer than this worker's "
                f"({FORMAT_VERSION}); upgrade i-worker-memory"
            )
        if version != FORMAT_VERSION:
            raise _Unreadable(f"its 'version' is {version!r}, expected {FORMAT_VERSION}")
        entries = document.get("entries")
        if not isinstance(entries, dict):
            raise _Unreadable("its 'entries' is not an object")
        for key, value in entries.items():
            if not isinstance(value, str):
                raise _Unreadable(f"entry {quote(key)} holds a {type(value).__name__}, not a string")
        return document, entries

    def _load_or_quarantine(self) -> tuple[dict[str, Any], dict[str, str]]:
        """Read under the lock; an unreadable file is moved aside and the call fails."""
        try:
            return self._load()
        except _Unreadable as exc:
            kept = set_aside(self.path)
            raise MemoryStoreError(
                f"{self.path} is corrupt: {exc}. It was moved to {kept} so that nothing overwrites it. "
                + _RECOVERY.format(kept=kept)
            ) from None

    def _quarantined(self) -> list[str]:
        try:
            names = os.listdir(self.state_dir)
        except FileNotFoundError:
            return []
        return sorted(name for name in names if name.startswith(CORRUPT_PREFIX))

    def _refuse_if_quarantined(self) -> None:
        kept = self._quarantined()
        if kept:
            paths = ", ".join(str(self.state_dir / name) for name in kept[:5])
            raise MemoryStoreError(
                f"memory is unavailable: an earlier {STATE_NAME} was corrupt and is kept at {paths}. "
                + _RECOVERY.format(kept=str(self.state_dir / kept[-1]))
            )

    # -- writing ------------------------------------------------------------------------

    def set(self, key: str, value: str) -> Change:
        """Create or replace one entry: one lock, one read, at most one atomic write."""
        with self._locked() as file:
            document, entries = self._load_or_quarantine()
            old = entries.get(key)
            if old == value:
                return Change("unchanged", entries)
            updated = {**entries, key: value}
            self._check_limits(entries, updated, is_new=old is None)
            self._write(file, document, updated)
            return Change("created" if old is None else "updated", updated)

    def delete(self, key: str) -> Change | None:
        """Remove one entry; None (and no write) when it does not exist."""
        with self._locked() as file:
            document, entries = self._load_or_quarantine()
            if key not in entries:
                return None
            remaining = {name: value for name, value in entries.items() if name != key}
            self._write(file, document, remaining)
            return Change("deleted", remaining)

    def _check_limits(self, before: dict[str, str], after: dict[str, str], *, is_new: bool) -> None:
        limits = self.limits
        if is_new and len(after) > limits.max_entries:
            raise MemoryStoreError(
                f"memory_set: memory is full ({len(before)} of {limits.max_entries} entries). Delete entries "
                "that are no longer useful (memory_list shows them), or update an existing key."
            )
        size = total_bytes(after)
        if size > limits.max_total_bytes and size > (previous := total_bytes(before)):
            raise MemoryStoreError(
                f"memory_set: this would make memory {size} bytes, over its {limits.max_total_bytes}-byte limit "
                f"(now {previous} bytes). Shorten the value or delete entries that are no longer useful."
            )

    def _write(self, file: LockedFile, document: dict[str, Any], entries: dict[str, str]) -> None:
        body = orjson.dumps(
            {**document, "version": FORMAT_VERSION, "entries": entries},
            option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS,
        )
        try:
            file.replace(body + b"\n")
        except OSError as exc:
            raise MemoryStoreError(f"{self.path}: cannot write memory: {exc.strerror or exc}") from None

    @contextmanager
    def _locked(self) -> Iterator[LockedFile]:
        try:
            self.state_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MemoryStoreError(f"{self.state_dir}: cannot create the state folder: {exc.strerror or exc}") from None
        try:
            with locked_update(self.path, timeout=LOCK_TIMEOUT_S) as file:
                yield file
        except LockTimeout as exc:
            raise MemoryStoreError(str(exc)) from exc


_RECOVERY = (
    "Memory is unavailable until a person deals with that file (tell the user): to recover it, repair "
    "the JSON and rename it back to " + STATE_NAME + "; to start with empty memory, delete it or rename it "
    "to a name that does not start with '" + CORRUPT_PREFIX + "' (for example {kept}.bak)."
)
