"""Prefix fingerprints: one digest per message, chained, kept per stream in process memory.

An append is recognised by comparing the new request's messages with the previous request's
message objects held in memory (an equality walk, no hashing), so only the new messages are
serialised and hashed. Only a request that does not extend the previous one (or a stream this
process has not seen) pays for a digest of every message.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import orjson

DIGEST_BYTES = 16
TAIL_DIGESTS = 64
"""How many trailing message digests a stream keeps on disk to recognise a compaction later."""
MEMORY_STREAMS = 16
"""Streams whose previous messages this process keeps in memory for the append fast path."""
_CHAIN_SEED = b"i-cache-prefix/1"

CLASSIFICATIONS = ("new", "append", "reset", "compact")


def message_digest(message: object) -> bytes:
    """A 16-byte digest of one message's canonical JSON (keys sorted)."""
    try:
        raw = orjson.dumps(message, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        # orjson refuses integers beyond 64 bits; the stdlib encoder does not.
        text = json.dumps(message, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        raw = text.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).digest()[:DIGEST_BYTES]


def chain_next(previous: bytes, digest: bytes) -> bytes:
    """Extend a prefix chain by one message digest."""
    return hashlib.sha256(previous + digest).digest()[:DIGEST_BYTES]


def chain_start(header_digest: bytes) -> bytes:
    """The chain value before any message: it covers tools and system fields outside the messages."""
    return hashlib.sha256(_CHAIN_SEED + header_digest).digest()[:DIGEST_BYTES]


@dataclass(frozen=True)
class PromptParts:
    """The parts of a request body that form the cacheable prefix, by protocol."""

    header: dict[str, Any]
    system: object
    items: list[Any]


def prompt_parts(protocol: str, body: dict[str, Any]) -> PromptParts:
    """Split a request body into header (tools, system fields), system prompt and message items."""
    tools = body.get("tools")
    if protocol == "anthropic":
        items = _as_list(body.get("messages"))
        system = body.get("system")
        return PromptParts({"tools": tools, "system": system}, system, items)
    if protocol == "responses":
        raw = body.get("input")
        items = [raw] if isinstance(raw, str) else _as_list(raw)
        system = body.get("instructions")
        if system is None and items and _is_system(items[0]):
            system = items[0]
        return PromptParts({"tools": tools, "instructions": body.get("instructions")}, system, items)
    items = _as_list(body.get("messages"))
    system = items[0] if items and _is_system(items[0]) else None
    return PromptParts({"tools": tools}, system, items)


def _as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _is_system(item: object) -> bool:
    return isinstance(item, dict) and item.get("role") in ("system", "developer")


@dataclass
class StreamMemory:
    """The previous request of one stream as this process saw it."""

    header: bytes
    items: list[Any]
    digests: list[bytes]
    chain: bytes


@dataclass(frozen=True)
class PreviousPrefix:
    """What the stats file remembers about a stream's previous request."""

    messages: int
    fingerprint: str
    header: str
    system: str
    tail_start: int
    tail: tuple[str, ...]


@dataclass
class Classified:
    """The outcome of classifying one request against its stream's previous one."""

    classification: str
    messages: int
    fingerprint: str
    header: str
    common: int | None
    hashed: int
    memory: StreamMemory = field(repr=False)

    def tail(self) -> tuple[int, list[str]]:
        """Index of the first kept digest and the trailing digests to persist."""
        digests = self.memory.digests[-TAIL_DIGESTS:]
        return len(self.memory.digests) - len(digests), [d[:8].hex() for d in digests]


class PrefixTracker:
    """Per-stream rolling fingerprints kept in process memory (bounded LRU)."""

    def __init__(self, capacity: int = MEMORY_STREAMS) -> None:
        self._capacity = capacity
        self._streams: OrderedDict[str, StreamMemory] = OrderedDict()

    def classify(self, stream: str, parts: PromptParts, previous: PreviousPrefix | None) -> Classified:
        """Classify ``parts`` as new/append/reset/compact against the stream's previous request."""
        header = message_digest(parts.header)
        memory = self._streams.get(stream)
        if memory is not None and (
            previous is None or previous.fingerprint != memory.chain.hex() or previous.messages != len(memory.items)
        ):
            # Another process (or a reset stats file) moved this stream on: memory is stale.
            memory = None
            self._streams.pop(stream, None)
        items = parts.items
        if memory is not None and memory.header == header and _extends(items, memory.items):
            done = len(memory.items)
            digests = list(memory.digests)
            chain = memory.chain
            for item in items[done:]:
                digest = message_digest(item)
                digests.append(digest)
                chain = chain_next(chain, digest)
            result = self._remember(stream, StreamMemory(header, items, digests, chain))
            return Classified("append", len(items), chain.hex(), header.hex(), done, len(items) - done, result)
        digests = [message_digest(item) for item in items]
        chains = [chain_start(header)]
        for digest in digests:
            chains.append(chain_next(chains[-1], digest))
        fresh = self._remember(stream, StreamMemory(header, items, digests, chains[-1]))
        if previous is None:
            return Classified("new", len(items), chains[-1].hex(), header.hex(), None, len(items), fresh)
        if len(items) >= previous.messages and chains[previous.messages].hex() == previous.fingerprint:
            return Classified(
                "append", len(items), chains[-1].hex(), header.hex(), previous.messages, len(items), fresh
            )
        prior = memory.digests if memory is not None else None
        # A compaction keeps tools and the system prompt; a break there leaves nothing cached.
        same_head = header.hex() == previous.header and message_digest(parts.system).hex() == previous.system
        kind = "compact" if same_head and _survives_after_break(digests, previous, prior) else "reset"
        common = _common_prefix(digests, prior) if prior is not None and header.hex() == previous.header else None
        return Classified(kind, len(items), chains[-1].hex(), header.hex(), common, len(items), fresh)

    def _remember(self, stream: str, memory: StreamMemory) -> StreamMemory:
        self._streams[stream] = memory
        self._streams.move_to_end(stream)
        while len(self._streams) > self._capacity:
            self._streams.popitem(last=False)
        return memory


def _extends(items: list[Any], previous: list[Any]) -> bool:
    # Deep equality of the parsed JSON: a memcmp per string, no serialisation and no hashing.
    return len(items) >= len(previous) and items[: len(previous)] == previous


def _common_prefix(digests: list[bytes], prior: list[bytes]) -> int:
    count = 0
    for new, old in zip(digests, prior, strict=False):
        if new != old:
            break
        count += 1
    return count


def _survives_after_break(digests: list[bytes], previous: PreviousPrefix, prior: list[bytes] | None) -> bool:
    """True when part of the previous conversation survives behind a rewritten stretch.

    That is the shape a compaction leaves (system, summary, untouched recent suffix): some
    message at index j >= 1 equals the previous request's message k >= j, and either it moved
    (k > j) or what precedes it changed (the seam between summary and kept suffix).
    """
    if prior is not None:
        old = [d[:8].hex() for d in prior]
        start = 0
    else:
        old = list(previous.tail)
        start = previous.tail_start
    where = {digest: start + offset for offset, digest in enumerate(old)}
    current = [d[:8].hex() for d in digests]
    for j in range(1, len(current)):
        k = where.get(current[j])
        if k is None or k < j:
            continue
        if k > j:
            return True
        before = k - 1 - start
        if before < 0 or old[before] != current[j - 1]:
            return True
    return False
