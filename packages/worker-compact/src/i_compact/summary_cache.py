"""Summary cache: a model summary keyed by prompt + transcript + rendering schema version.

A prompt change or a change in how transcripts are rendered (``RENDER_SCHEMA``) yields a new
key, so an old summary is never reused for a different request.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import orjson

from i_protocol import atomic_write_bytes
from i_protocol.errors import FileError
from i_protocol.files import read_json

RENDER_SCHEMA = 1
"""Bump whenever the transcript rendering or reduction changes what the model would see."""
MAX_ENTRIES = 64
MAX_ENTRY_BYTES = 4 << 20
"""A cached entry larger than this is damaged (a summary is far smaller): read as a miss."""


def cache_key(prompt: str, messages: list[dict[str, Any]], images: list[dict[str, Any]], model: Any) -> str:
    """A hex digest over everything that determines the summary request."""
    digest = hashlib.sha256()
    digest.update(f"i-compact-summary/{RENDER_SCHEMA}\0".encode())
    digest.update(orjson.dumps([prompt, model if isinstance(model, str) else None, messages, images]))
    return digest.hexdigest()


def _folder(cache_dir: str) -> Path:
    return Path(cache_dir) / "compact" / "summaries"


def lookup(cache_dir: str, key: str) -> str | None:
    """The cached canonical summary for ``key``, or None (a damaged entry counts as a miss)."""
    try:
        entry = read_json(_folder(cache_dir) / f"{key}.json", MAX_ENTRY_BYTES, what="cached summary")
    except (OSError, FileError):
        return None
    if not isinstance(entry, dict) or entry.get("schema") != RENDER_SCHEMA or entry.get("key") != key:
        return None
    summary = entry.get("summary")
    return summary if isinstance(summary, str) and summary.strip() else None


def store(cache_dir: str, key: str, summary: str) -> None:
    """Remember ``summary`` for ``key`` and keep the folder to the newest MAX_ENTRIES entries."""
    folder = _folder(cache_dir)
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / f"{key}.json", orjson.dumps({"schema": RENDER_SCHEMA, "key": key, "summary": summary}))
    entries = sorted(folder.glob("*.json"), key=lambda p: _mtime(p))
    for old in entries[:-MAX_ENTRIES]:
        try:
            os.unlink(old)
        except OSError:
            pass


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:
        return 0.0
