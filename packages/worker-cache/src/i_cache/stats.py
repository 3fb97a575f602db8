"""The stats file: cumulative counters, the last 200 records and 256 streams.

Every update happens under a file lock and replaces the file atomically, so concurrent workers
never lose a count. It stores digests, counts and model names only: no prompt text, no tool
bodies, no credentials. A corrupt file is moved aside and reported, never silently reset.

The document opens with ``"version"``, ``"file_id"`` (random, new for every new file) and
``"generation"`` (incremented by every writer under the lock). A worker reuses the document it
wrote last, instead of parsing the file again, only when the file still carries that very
(file_id, generation) — read from its first bytes — *and* the same (inode, mtime, size). The
stat identity alone is not enough: where timestamps are coarse and inode numbers are reused at
once (ext2, FAT, some network shares), two versions of the file can look identical to ``stat``.
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from i_protocol.errors import FileTooLarge, LockTimeout
from i_protocol.files import locked_update, open_regular, read_bytes, set_aside

from .errors import CacheError, CorruptStats

VERSION = 1
MAX_RECORDS = 200
MAX_STREAMS = 256
MAX_STATS_BYTES = 16 * 1024 * 1024
LOCK_TIMEOUT_S = 10.0
COUNTERS = (
    "prepared",
    "preparations",
    "retries",
    "observed",
    "known",
    "unknown",
    "duplicate_responses",
    "unprepared_observed",
    "input_tokens",
    "cache_read_tokens",
    "cache_creation_tokens",
)


def now() -> str:
    """UTC timestamp used in the stats file."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def empty_counter() -> dict[str, Any]:
    """A zeroed counter block (totals, one classification, one protocol)."""
    block: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    block["unknown_reasons"] = {}
    return block


def empty_stats() -> dict[str, Any]:
    """A new stats document (with a new file id, generation 0 until it is written)."""
    stamp = now()
    return {
        "version": VERSION,
        "file_id": uuid.uuid4().hex,
        "generation": 0,
        "created_at": stamp,
        "updated_at": stamp,
        "totals": empty_counter(),
        "by_classification": {},
        "by_protocol": {},
        "streams": {},
        "records": [],
    }


def parse_stats(raw: bytes) -> dict[str, Any]:
    """Parse and check a stats document; raises ``ValueError`` describing the damage."""
    if not raw.strip():
        raise ValueError("the file is empty (truncated?)")
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ValueError(f"invalid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError("the document is not an object")
    if data.get("version") != VERSION:
        raise ValueError(f"unsupported version {data.get('version')!r}")
    # Absent in files written before they existed; the next write adds them.
    if "file_id" in data and not (isinstance(data["file_id"], str) and _FILE_ID.fullmatch(data["file_id"])):
        raise ValueError("'file_id' is not 32 lowercase hex digits")
    generation = data.get("generation", 0)
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise ValueError("'generation' is not a non-negative integer")
    _check_counter(data.get("totals"), "totals")
    for group in ("by_classification", "by_protocol"):
        blocks = data.get(group)
        if not isinstance(blocks, dict):
            raise ValueError(f"'{group}' is not an object")
        for name, block in blocks.items():
            _check_counter(block, f"{group}.{name}")
    if not isinstance(data.get("streams"), dict) or not all(isinstance(v, dict) for v in data["streams"].values()):
        raise ValueError("'streams' is not an object of objects")
    if not isinstance(data.get("records"), list) or not all(isinstance(r, dict) for r in data["records"]):
        raise ValueError("'records' is not a list of objects")
    return data


def _check_counter(block: object, where: str) -> None:
    if not isinstance(block, dict):
        raise ValueError(f"'{where}' is not an object")
    for key in COUNTERS:
        value = block.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"'{where}.{key}' is not a non-negative integer")
    reasons = block.get("unknown_reasons")
    if not isinstance(reasons, dict) or not all(
        isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in reasons.values()
    ):
        raise ValueError(f"'{where}.unknown_reasons' is not an object of counts")


def read_stats(path: Path) -> dict[str, Any] | None:
    """The stats document at ``path`` (None when absent); ``CorruptStats`` when damaged. Read-only."""
    try:
        raw = _read_bounded(path)
    except FileNotFoundError:
        return None
    try:
        return parse_stats(raw)
    except ValueError as exc:
        raise CorruptStats(f"{path}: cache stats file is corrupt: {exc}") from None


def _read_bounded(path: Path) -> bytes:
    try:
        return read_bytes(path, MAX_STATS_BYTES, what="cache stats file")
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise CacheError(f"{path}: cannot read cache stats: {exc.strerror or exc}") from None
    except FileTooLarge as exc:
        raise CorruptStats(str(exc)) from exc


@contextmanager
def locked_stats(path: Path) -> Iterator[dict[str, Any]]:
    """Lock the stats file, yield its document for in-place changes, then replace it atomically.

    A damaged file is moved aside and reported with ``CorruptStats``; nothing is written then,
    so the next update starts a new file and the damaged one stays for inspection.
    """
    try:
        # Statistics, not user data: atomic for readers, but no fsync on every request (it was
        # most of a turn's hook cost); a power loss can lose the last few records at worst.
        with locked_update(path, timeout=LOCK_TIMEOUT_S, durable=False) as file:
            # The document this process wrote last is reused, saving a parse per call, only when the
            # file is still that very version: the same (file_id, generation) at its start — every
            # writer bumps the generation under this lock — and the same (inode, mtime, size).
            # A failed update drops the memo, so a half-changed document is never reused.
            remembered = _written.pop(str(path), None)
            fresh = remembered is not None and _identity(path) == remembered[0]
            data = remembered[1] if fresh and remembered is not None else _load(path)
            yield data
            data["updated_at"] = now()
            _trim(data)
            stamp = _next_generation(data)
            file.replace(orjson.dumps(data))
            signature = _signature(path)
            if signature is not None:
                _written[str(path)] = ((stamp, signature), data)
    except LockTimeout as exc:
        raise CacheError(str(exc)) from exc


_written: dict[str, tuple[tuple[tuple[str, int], tuple[int, int, int]], dict[str, Any]]] = {}
_FILE_ID = re.compile(r"[0-9a-f]{32}")
_HEADER = re.compile(rb'\{"version":\d+,"file_id":"([0-9a-f]{32})","generation":(\d{1,19})[,}]')
_HEADER_BYTES = 128


def _next_generation(data: dict[str, Any]) -> tuple[str, int]:
    """Bump the document's generation, keeping version, file_id, generation as its first keys."""
    file_id, generation = data.get("file_id"), data.get("generation", 0)
    if list(data)[:3] != ["version", "file_id", "generation"] or not isinstance(file_id, str):
        rest = {key: value for key, value in data.items() if key not in ("version", "file_id", "generation")}
        if not isinstance(file_id, str):
            file_id = uuid.uuid4().hex
        data.clear()
        data.update(version=VERSION, file_id=file_id, generation=generation)
        data.update(rest)
    data["generation"] = generation + 1
    return (file_id, generation + 1)


def _identity(path: Path) -> tuple[tuple[str, int], tuple[int, int, int]] | None:
    """(file_id, generation) from the file's first bytes, and its (inode, mtime, size)."""
    signature = _signature(path)
    if signature is None:
        return None
    try:
        with open_regular(path) as handle:
            head = handle.read(_HEADER_BYTES)
    except OSError:
        return None
    match = _HEADER.match(head)
    if match is None:
        return None
    return ((match.group(1).decode("ascii"), int(match.group(2))), signature)


def _signature(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _load(path: Path) -> dict[str, Any]:
    try:
        raw = _read_bounded(path)
    except FileNotFoundError:
        return empty_stats()
    try:
        return parse_stats(raw)
    except ValueError as exc:
        aside = os.path.basename(set_aside(path))
        raise CorruptStats(
            f"{path}: cache stats file is corrupt ({exc}); moved aside to {aside}; "
            "the next request starts a new stats file"
        ) from None


def _trim(data: dict[str, Any]) -> None:
    records = data["records"]
    if len(records) > MAX_RECORDS:
        del records[: len(records) - MAX_RECORDS]
    streams = data["streams"]
    if len(streams) > MAX_STREAMS:
        # "seq" is the prepared-count when the stream was last used: a total order, unlike timestamps.
        order = sorted(streams, key=lambda name: (streams[name].get("seq", 0), str(streams[name].get("updated_at"))))
        for name in order[: len(streams) - MAX_STREAMS]:
            del streams[name]


def bump(data: dict[str, Any], classification: str | None, protocol: str | None, key: str, amount: int = 1) -> None:
    """Add ``amount`` to counter ``key`` in the totals and in the classification/protocol blocks."""
    for block in _blocks(data, classification, protocol):
        block[key] += amount


def bump_reason(data: dict[str, Any], classification: str | None, protocol: str | None, reason: str) -> None:
    """Count one unknown usage with its reason code."""
    for block in _blocks(data, classification, protocol):
        reasons = block["unknown_reasons"]
        reasons[reason] = reasons.get(reason, 0) + 1


def _blocks(data: dict[str, Any], classification: str | None, protocol: str | None) -> list[dict[str, Any]]:
    blocks = [data["totals"]]
    if classification is not None:
        blocks.append(data["by_classification"].setdefault(classification, empty_counter()))
    if protocol is not None:
        blocks.append(data["by_protocol"].setdefault(protocol, empty_counter()))
    return blocks


def find_record(data: dict[str, Any], request_id: str) -> dict[str, Any] | None:
    """The kept record of ``request_id`` (newest first), if it is still among the last 200."""
    records: list[dict[str, Any]] = data["records"]
    for record in records[::-1]:
        if record.get("request_id") == request_id:
            return record
    return None
