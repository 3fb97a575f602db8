"""Where learned densities live: per (server origin, model), in the workspace state.

``<workspace state>/budget/density.json`` under a file lock with atomic replace (several cores
may share a workspace), at most ``MAX_ENTRIES`` entries and ``MAX_FILE_BYTES``. Without a
workspace the worker keeps what it learned in memory for the life of its process.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from i_protocol.errors import FileDecodeError, FileTooLarge, LockTimeout
from i_protocol.files import locked_update, read_json

from .density import CLASSES, KEEP_SCALES, merged

FILE_NAME = "density.json"
MAX_ENTRIES = 256
MAX_FILE_BYTES = 1 << 20
MAX_SEEN = 64
"""Recent observation keys per entry: the same anchor seen twice is learned once."""
LOCK_TIMEOUT_S = 2.0
VERSION = 1


def density_path(state_dir: Path) -> Path:
    """Where a workspace's learned densities live."""
    return state_dir / "budget" / FILE_NAME


def entry_key(origin: str, model: str) -> str:
    """The store key of one (origin, model) pair."""
    return f"{origin} {model}"


@dataclass(slots=True)
class Learned:
    """One entry: recent scales per class and the keys of the observations already learned."""

    scales: list[list[float]] = field(default_factory=lambda: [[] for _ in CLASSES])
    seen: list[str] = field(default_factory=list)
    detail: str | None = None


def _entry(raw: object) -> Learned:
    if not isinstance(raw, dict):
        return Learned()
    scales: list[list[float]] = []
    stored = raw.get("scales")
    for name in CLASSES:
        values = stored.get(name) if isinstance(stored, dict) else None
        good = (
            [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool) and v > 0]
            if isinstance(values, list)
            else []
        )
        scales.append(good[-KEEP_SCALES:])
    seen_raw = raw.get("seen")
    seen = [s for s in seen_raw if isinstance(s, str)][-MAX_SEEN:] if isinstance(seen_raw, list) else []
    return Learned(scales, seen)


def _encode(learned: Learned) -> dict[str, Any]:
    return {
        "scales": dict(zip(CLASSES, learned.scales, strict=True)),
        "seen": learned.seen[-MAX_SEEN:],
        "updated": time.time(),
    }


class MemoryStore:
    """Densities kept in this process only (no workspace to write to)."""

    def __init__(self) -> None:
        self._entries: dict[str, Learned] = {}

    def load(self, key: str) -> Learned:
        """The entry for ``key`` (empty when unknown)."""
        entry = self._entries.get(key)
        return Learned([list(s) for s in entry.scales], list(entry.seen)) if entry else Learned()

    def record(self, key: str, seen_key: str, learned: list[float | None]) -> str:
        """Add one observation's scales; returns what happened, for ``budget_result.density``."""
        entry = self._entries.setdefault(key, Learned())
        if seen_key in entry.seen:
            return "known"
        entry.scales = merged(entry.scales, learned)
        entry.seen = [*entry.seen, seen_key][-MAX_SEEN:]
        if len(self._entries) > MAX_ENTRIES:
            self._entries.pop(next(iter(self._entries)))
        return "recorded (in memory: no workspace)"


class FileStore:
    """Densities in the workspace state file, locked and atomically replaced."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def _read(self) -> tuple[dict[str, Any], str | None]:
        empty: dict[str, Any] = {"version": VERSION, "entries": {}}
        try:
            doc = read_json(self.path, MAX_FILE_BYTES)
        except FileNotFoundError:
            return empty, None
        except OSError as exc:
            return empty, f"{self.path.name} unreadable ({exc.strerror}); learning afresh"
        except FileTooLarge:
            return empty, f"{self.path.name} is over {MAX_FILE_BYTES} bytes; learning afresh"
        except FileDecodeError:
            return empty, f"{self.path.name} is not valid JSON; learning afresh"
        if not isinstance(doc, dict) or not isinstance(doc.get("entries"), dict):
            return empty, f"{self.path.name} has an unknown shape; learning afresh"
        return doc, None

    def load(self, key: str) -> Learned:
        """The entry for ``key``; a damaged file reads as empty and says so in ``detail``."""
        doc, problem = self._read()
        entry = _entry(doc["entries"].get(key))
        entry.detail = problem
        return entry

    def record(self, key: str, seen_key: str, learned: list[float | None]) -> str:
        """Add one observation's scales under the lock; returns what happened."""
        try:
            with locked_update(self.path, timeout=LOCK_TIMEOUT_S, durable=False) as file:
                doc, _problem = self._read()
                entries: dict[str, Any] = doc["entries"]
                entry = _entry(entries.get(key))
                if seen_key in entry.seen:
                    return "known"
                entry.scales = merged(entry.scales, learned)
                entry.seen = [*entry.seen, seen_key]
                entries.pop(key, None)
                entries[key] = _encode(entry)
                while len(entries) > MAX_ENTRIES:
                    oldest = min(entries, key=lambda name: _updated(entries[name]))
                    del entries[oldest]
                payload = orjson.dumps({"version": VERSION, "entries": entries})
                # The reader refuses a file over MAX_FILE_BYTES (and would drop every entry): never write one.
                while len(payload) > MAX_FILE_BYTES and len(entries) > 1:
                    del entries[min(entries, key=lambda name: _updated(entries[name]))]
                    payload = orjson.dumps({"version": VERSION, "entries": entries})
                if len(payload) > MAX_FILE_BYTES:
                    return f"skipped: one entry would be over {MAX_FILE_BYTES} bytes"
                file.replace(payload)
        except LockTimeout:
            return "skipped: the density file is locked by another process"
        except OSError as exc:
            return f"skipped: the density file is not writable ({exc.strerror or exc})"
        return "recorded"


def _updated(entry: object) -> float:
    value = entry.get("updated", 0) if isinstance(entry, dict) else 0
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0
