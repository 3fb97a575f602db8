"""NDJSON framing shared by hosts and workers: one JSON object per line, 48 MiB at most."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import orjson

from .errors import FrameError
from .jsonsafe import dumps_safe, loads_safe, utf8_error

if TYPE_CHECKING:
    from typing import BinaryIO

MAX_FRAME_BYTES = 48 * 1024 * 1024
"""Largest frame on the wire, newline included, checked on read and on write."""

_ID_PATTERN = rb'^\s*\{\s*"id"\s*:\s*(\d{1,20})\s*[,}]'


def encode_frame(message: dict[str, Any], *, strict: bool = False) -> bytes:
    """Serialise one message to a newline-terminated frame, refusing frames over the limit.

    Lone surrogates (undecodable text) are written as ``\\udcXX`` escapes, losslessly; with
    ``strict`` one raises ``UnicodeEncodeError`` instead (a host replaces them for its workers).
    """
    try:
        body = orjson.dumps(message) if strict else dumps_safe(message)
    except TypeError as exc:
        if strict and "surrogates" in str(exc):
            raise UnicodeEncodeError("utf-8", "", 0, 1, "a lone surrogate") from None
        raise FrameError(f"frame is not JSON-serialisable: {exc}") from None
    if len(body) + 1 > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(body) + 1} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    return body + b"\n"


def decode_frame(line: bytes) -> dict[str, Any]:
    """Parse one frame (with or without its newline) into a JSON object.

    A FrameError says what the line is instead (with its first bytes), so that either side can
    name the peer's mistake: a log line on the protocol stream, text that is not UTF-8, broken JSON.
    """
    if len(line) > MAX_FRAME_BYTES:
        raise FrameError(f"frame of {len(line)} bytes exceeds the {MAX_FRAME_BYTES}-byte limit")
    try:
        value = loads_safe(line)
    except orjson.JSONDecodeError as exc:
        raise FrameError(describe_invalid(line, exc)) from None
    if not isinstance(value, dict):
        raise FrameError(f"frame must be a JSON object, got {type(value).__name__}")
    return value


def describe_invalid(line: bytes, exc: Exception) -> str:
    """Why ``line`` is not a frame: not JSON at all (a log line?), not UTF-8, or broken JSON."""
    preview = line[:80].decode("utf-8", "backslashreplace").strip()
    if not line.lstrip().startswith(b"{"):
        return f"not a JSON frame: {preview!r} (a protocol stream carries frames only; logs belong on stderr)"
    bad = utf8_error(line)
    if bad is not None:
        return (
            f"frame is not valid UTF-8 ({bad}): {preview!r}; frames are UTF-8 JSON, and undecodable text "
            "must be sent as a JSON escape of its lone surrogate (\\udce9 for the byte 0xe9, as Python's "
            "json.dumps writes it)"
        )
    return f"frame is not valid JSON ({exc}): {preview!r}"


def peek_id(line: bytes) -> int | None:
    """Best-effort id of a frame that cannot be parsed whole (oversized or invalid JSON)."""
    import re  # only on the error path: ``re`` costs start-up time

    match = re.match(_ID_PATTERN, line[:128])
    if match is None:
        return None
    value = int(match.group(1))
    return value if value < 2**64 else None


def read_line(stream: BinaryIO) -> tuple[bytes, bool]:
    """Read one line of at most MAX_FRAME_BYTES; returns (bytes, oversized).

    An oversized line is consumed to its end so that the stream stays in step; only its
    first bytes are returned (enough to peek at the id). EOF returns ``(b"", False)``.
    """
    line = stream.readline(MAX_FRAME_BYTES + 1)
    if len(line) <= MAX_FRAME_BYTES:
        return line, False
    head = line[:128]
    while not line.endswith(b"\n"):
        line = stream.readline(1 << 20)
        if not line:
            break
    return head, True


def is_unsigned_id(value: object) -> bool:
    """True when ``value`` is a valid request id: an unsigned 64-bit integer, not a bool."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**64
