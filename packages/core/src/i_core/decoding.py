"""Content-Encoding undone one bounded step at a time: no layer ever makes more than ``STEP`` bytes
from one call, so a stacked bomb (``gzip, gzip``: 125 kB on the wire, 10 GiB inflated) costs at
most a step per layer in memory before the body cap stops the reader.

httpx decodes each raw chunk whole (a 64 KiB chunk of the outer layer can become megabytes of the
inner one, then gigabytes), so the transport reads raw bytes and undoes the codings here. Only
codings whose decoder can bound its output are accepted, and only those are asked for
(``ACCEPT_ENCODING``): gzip (``x-gzip``) and deflate (zlib-wrapped or raw), in any stack.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Iterator

from .errors import TransportError

ACCEPT_ENCODING = "gzip, deflate"
# The most one layer hands on from one call; the next layer takes it before this one goes on.
STEP = 64 * 1024
_CODINGS = ("gzip", "x-gzip", "deflate")


class _Layer:
    """One coding's decompressor, asked for at most ``STEP`` bytes at a time."""

    def __init__(self, coding: str) -> None:
        self.coding = coding
        self._first = True
        self._full = False  # the last call filled its step: more output may wait inside zlib
        wbits = 16 + zlib.MAX_WBITS if coding in ("gzip", "x-gzip") else zlib.MAX_WBITS
        self._zlib = zlib.decompressobj(wbits)

    def feed(self, data: bytes) -> bytes:
        """At most STEP bytes decoded from ``data`` plus the input held back from the last call."""
        data = self._zlib.unconsumed_tail + data
        try:
            out = self._zlib.decompress(data, STEP)
        except zlib.error:
            if not (self._first and self.coding == "deflate"):
                raise
            # Servers disagree on whether "deflate" means zlib-wrapped or raw deflate.
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            out = self._zlib.decompress(data, STEP)
        self._first = False
        self._full = len(out) == STEP
        return out

    @property
    def pending(self) -> bool:
        """True while input is held back or a full step may have left output inside."""
        return not self._zlib.eof and (bool(self._zlib.unconsumed_tail) or self._full)


def codings(header: str | None) -> list[str]:
    """The codings of a Content-Encoding header in the order they were applied ('' and identity dropped);
    a coding this module cannot bound is a TransportError."""
    found = [c.strip().lower() for c in (header or "").split(",")]
    found = [c for c in found if c and c != "identity"]
    for coding in found:
        if coding not in _CODINGS:
            raise TransportError(
                f"model response has Content-Encoding {header!r}: {coding!r} is not one of the codings "
                f"asked for ({ACCEPT_ENCODING})"
            )
    return found


def decoded(chunks: Iterable[bytes], header: str | None) -> Iterator[bytes]:
    """The body of raw ``chunks`` with the codings of ``header`` undone, lazily, each piece at most STEP
    bytes: the reader stops when it has enough, and no layer ran ahead of it."""
    layers = [_Layer(coding) for coding in reversed(codings(header))]  # the last applied is undone first
    if not layers:
        yield from (chunk for chunk in chunks if chunk)
        return
    try:
        for chunk in chunks:
            yield from _through(layers, 0, chunk)
    except zlib.error as exc:
        raise TransportError(f"model response body is not valid {header} data: {exc}") from None


def _through(layers: list[_Layer], index: int, data: bytes) -> Iterator[bytes]:
    if index == len(layers):
        if data:
            yield data
        return
    layer = layers[index]
    out = layer.feed(data)
    while True:
        if out:
            yield from _through(layers, index + 1, out)
        if not layer.pending:
            return
        out = layer.feed(b"")
