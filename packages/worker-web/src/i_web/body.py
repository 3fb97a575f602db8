"""Reading a response body under a byte cap (counted after decompression) and decoding its text."""

from __future__ import annotations

import codecs
import re
import time
import zlib
from collections.abc import Iterable
from dataclasses import dataclass

from .errors import WebError

MAX_BODY_BYTES = 1024 * 1024
_CHUNK = 64 * 1024
_META_CHARSET = re.compile(rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]{1,40})""", re.I)
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = (
    "application/json",
    "application/xml",
    "application/javascript",
    "application/ecmascript",
    "application/x-ndjson",
    "application/x-www-form-urlencoded",
    "application/yaml",
    "application/x-yaml",
    "application/toml",
    "application/rss+xml",
    "application/atom+xml",
)


@dataclass(frozen=True)
class Body:
    """Decoded body bytes (at most the cap) and whether reading stopped at the cap."""

    data: bytes
    truncated: bool
    note: str = ""


class _Decoder:
    """Incremental decompression that never produces more than it is asked for."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._first = True
        self._pending = b""
        if coding in ("gzip", "x-gzip"):
            self._zlib: zlib._Decompress | None = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif coding == "deflate":
            self._zlib = zlib.decompressobj()
        else:
            self._zlib = None

    def feed(self, data: bytes, room: int) -> bytes:
        """Decompress ``data`` (plus any held-back input), returning at most ``room`` bytes."""
        if self._zlib is None:
            return data
        data = self._pending + data
        try:
            out = self._zlib.decompress(data, room)
        except zlib.error:
            if not (self._first and self.coding == "deflate"):
                raise
            # Servers disagree on whether "deflate" means zlib-wrapped or raw deflate.
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, room)
        self._first = False
        self._pending = self._zlib.unconsumed_tail
        return out

    @property
    def incomplete(self) -> bool:
        """True when a compressed stream ended before its end marker."""
        return self._zlib is not None and not self._zlib.eof

    @property
    def has_pending(self) -> bool:
        """True when input is held back because the last call hit its output limit."""
        return bool(self._pending)


def content_codings(header: str | None) -> str:
    """The one content coding to undo ('' for none); stacked or unknown codings are refused."""
    codings = [c.strip().lower() for c in (header or "").split(",") if c.strip() and c.strip().lower() != "identity"]
    if not codings:
        return ""
    if len(codings) > 1:
        raise WebError(f"unsupported stacked Content-Encoding {header!r}")
    if codings[0] not in ("gzip", "x-gzip", "deflate"):
        raise WebError(f"unsupported Content-Encoding {codings[0]!r} (gzip and deflate are supported)")
    return codings[0]


def read_body(chunks: Iterable[bytes], coding: str, deadline: float, limit: int = MAX_BODY_BYTES) -> Body:
    """Read raw ``chunks`` and decode them, stopping once ``limit`` decoded bytes are exceeded.

    The cap applies to decompressed bytes so a small compressed bomb cannot grow in memory.
    """
    decoder = _Decoder(coding)
    out = bytearray()
    for chunk in chunks:
        if time.monotonic() > deadline:
            raise WebError("timed out while reading the body")
        try:
            out += decoder.feed(chunk, limit + 1 - len(out))
            while decoder.has_pending and len(out) <= limit:
                out += decoder.feed(b"", limit + 1 - len(out))
        except zlib.error:
            return Body(bytes(out[:limit]), False, f"the {coding} body is corrupt; showing what decoded cleanly")
        if len(out) > limit:
            return Body(bytes(out[:limit]), True)
    if decoder.incomplete:
        return Body(bytes(out), False, f"the {coding} body ended early; showing what decoded")
    return Body(bytes(out), False)


def media_type(content_type: str | None) -> str:
    """The lower-case media type of a Content-Type header, without parameters."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def content_kind(content_type: str | None, head: bytes) -> str:
    """'html', 'text' or 'binary' from the media type, sniffing ``head`` when it is missing or generic."""
    kind = media_type(content_type)
    if kind in _HTML_TYPES:
        return "html"
    if kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml")):
        return "text"
    if kind and kind not in ("application/octet-stream", "binary/octet-stream", "application/unknown"):
        return "binary"
    sample = head[:1024].lstrip().lower()
    if b"\0" in head[:1024]:
        return "binary"
    if sample.startswith((b"<!doctype html", b"<html", b"<head", b"<body")):
        return "html"
    try:
        head[:1024].decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < 1020:  # a cut multi-byte sequence at the end is not evidence of binary
            return "binary"
    return "text"


def decode_text(data: bytes, content_type: str | None, is_html: bool) -> tuple[str, str]:
    """Decode with a BOM, else the header charset, else an HTML meta charset, else UTF-8; invalid
    bytes become U+FFFD. Returns the text and the charset used."""
    for bom, name in (
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(name, "replace"), name
    charset = _header_charset(content_type)
    if charset is None and is_html:
        match = _META_CHARSET.search(data[:4096])
        if match:
            charset = _known_charset(match.group(1).decode("ascii", "replace"))
            if charset is not None and charset.startswith("utf-16"):
                charset = "utf-8"  # HTML: a meta that claims UTF-16 in ASCII bytes is wrong by definition
    charset = charset or "utf-8"
    return data.decode(charset, "replace"), charset


def _header_charset(content_type: str | None) -> str | None:
    for param in (content_type or "").split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset":
            return _known_charset(value.strip().strip("'\""))
    return None


def _known_charset(name: str) -> str | None:
    try:
        return codecs.lookup(name).name
    except LookupError:
        return None
