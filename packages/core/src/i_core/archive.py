"""What compaction replaced, kept: an append-only archive of every generation beside the session.

``<session>.archive.jsonl`` holds one line per compaction (a *generation*): the original messages
it replaced, numbered as *spans* — every message that ever entered the session's history (system
prompt and compaction summaries aside) has a number, 1 first, that never changes. The summary of
each compaction cites the spans still recallable and every tool call id in them (compact form:
``call_ids.cite_ids``); the core's ``recall`` tool returns the originals of a span or of a tool
call id from here.

Consistency with the session: the archive is written before the checkpoint that refers to it, and
the session's ``meta["archive"]`` records the archive's size after the last committed generation.
Anything beyond that size — a generation whose checkpoint then failed, a line torn by a crash — is
debris: readers skip it and the next append removes it. Writes hold the session's lock (one writer
per session); an ordinary append is one ``O_APPEND`` write and an fsync, a trim (the size bound
dropping the oldest generations, or debris) an atomic rewrite. Lines are written with
``dumps_safe``, so lone surrogates stay exactly as the session had them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from i_protocol import atomic_write_bytes
from i_protocol.files import open_regular, set_aside
from i_protocol.history import is_summary
from i_protocol.jsonsafe import dumps_safe, loads_safe

from .call_ids import cite_ids
from .errors import SessionError, os_problem

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
"""The archive's default size bound (config.json ``archive_max_bytes``): at it the oldest generations go."""
MAX_CITATION_CHARS = 1200
"""About how long the citation may grow; beyond it older spans are cited as one range, without ids
(the newest span is always cited with every id it holds)."""


@dataclass(frozen=True)
class Generation:
    """One compaction's originals: messages numbered ``first`` .. ``last``."""

    number: int
    first: int
    messages: list[dict[str, Any]]

    @property
    def last(self) -> int:
        """The number of the generation's last message."""
        return self.first + len(self.messages) - 1

    def tool_call_ids(self) -> list[str]:
        """The ids of the tool calls the generation's assistant messages made, in order."""
        ids = []
        for message in self.messages:
            for call in message.get("tool_calls") or ():
                if isinstance(call, dict) and isinstance(call.get("id"), str):
                    ids.append(call["id"])
        return ids

    def line(self) -> bytes:
        """The generation as one archive line."""
        record = {"generation": self.number, "first": self.first, "messages": self.messages}
        return dumps_safe(record) + b"\n"


@dataclass
class Index:
    """What the session's ``meta["archive"]`` says: the next numbers, the committed size, what went."""

    next_span: int = 1
    next_generation: int = 1
    size: int = 0
    spans: list[list[Any]] = field(default_factory=list)
    """``[generation, first, last, [tool call ids]]`` of every generation still in the archive."""
    dropped: list[list[int]] = field(default_factory=list)
    """``[first, last]`` of spans the size bound removed (merged when adjacent)."""

    @classmethod
    def from_meta(cls, meta: dict[str, Any]) -> Index:
        raw = meta.get("archive")
        if not isinstance(raw, dict):
            return cls()
        return cls(
            next_span=_positive(raw.get("next_span"), 1),
            next_generation=_positive(raw.get("next_generation"), 1),
            size=_positive(raw.get("size"), 0),
            spans=[s for s in raw.get("spans", []) if _is_span_entry(s)],
            dropped=[d for d in raw.get("dropped", []) if _is_pair(d)],
        )

    def call_ids(self) -> frozenset[str]:
        """The tool call ids of every generation still archived (what ``recall`` finds by id)."""
        return frozenset(call_id for entry in self.spans for call_id in entry[3] if isinstance(call_id, str))

    def to_meta(self) -> dict[str, Any]:
        return {
            "next_span": self.next_span,
            "next_generation": self.next_generation,
            "size": self.size,
            "spans": self.spans,
            "dropped": self.dropped,
        }


def originals(replaced: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages of a compaction's replaced range that are originals (earlier summaries are not)."""
    return [message for message in replaced if not is_summary(message)]


class Archive:
    """The archive of one session (``<session>.archive.jsonl``), bounded to ``max_bytes``."""

    def __init__(self, session_path: Path, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.path = session_path.with_name(session_path.name.removesuffix(".json") + ".archive.jsonl")
        self.max_bytes = max_bytes

    def plan(self, index: Index, replaced: list[dict[str, Any]]) -> tuple[Generation | None, Index]:
        """The generation ``replaced`` becomes and the index after it is archived (nothing written yet).

        None when ``replaced`` holds no original (only an earlier summary): nothing to archive.
        """
        generation = Generation(index.next_generation, index.next_span, originals(replaced))
        if not generation.messages:
            return None, index
        line = len(generation.line())
        spans = [*index.spans, [generation.number, generation.first, generation.last, generation.tool_call_ids()]]
        sizes = [*self._sizes(index), line]
        dropped = [list(pair) for pair in index.dropped]
        # At the bound the oldest generations go (never the newest: it is what was just replaced).
        while len(spans) > 1 and sum(sizes) > self.max_bytes:
            _number, first, last, _ids = spans.pop(0)
            sizes.pop(0)
            _add_dropped(dropped, first, last)
        after = Index(generation.last + 1, generation.number + 1, sum(sizes), spans, dropped)
        return generation, after

    def write(self, index: Index, generation: Generation, after: Index) -> Index:
        """Archive ``generation`` as planned: an append, or a rewrite (the plan dropped some, or debris at the end).

        A damaged archive (a committed generation unreadable, the file shorter than its committed
        size) is set aside first (``<name>.corrupt-<UTC time>``, never overwritten), and the
        rewrite keeps what could still be read; the index returned (``after``, less what could not
        be read) is what the checkpoint records.
        """
        kept = {entry[0] for entry in after.spans}
        try:
            current = self.path.stat().st_size if self.path.exists() else 0
            if current == index.size and all(entry[0] in kept for entry in index.spans):
                self._append(generation.line())
                return after
            found, missing = self.read(index)
            if missing and current:
                set_aside(self.path)
            lines = [g.line() for g in found if g.number in kept]
            data = b"".join([*lines, generation.line()])
            atomic_write_bytes(self.path, data, mode=0o600)
        except OSError as exc:
            raise SessionError(f"cannot archive the compacted messages: {os_problem(exc)}") from None
        lost = set(missing)
        dropped: list[list[int]] = []
        gone = [list(pair) for pair in after.dropped] + [[e[1], e[2]] for e in after.spans if e[0] in lost]
        for first, last in sorted(gone):
            _add_dropped(dropped, first, last)
        spans = [entry for entry in after.spans if entry[0] not in lost]
        return Index(after.next_span, after.next_generation, len(data), spans, dropped)

    def generations(self, index: Index) -> list[Generation]:
        """The committed generations still in the archive (what ``recall`` may return)."""
        return self.read(index)[0]

    def read(self, index: Index) -> tuple[list[Generation], list[int]]:
        """The committed generations that can be read, and the numbers of those that cannot."""
        committed = [entry[0] for entry in index.spans]
        found = []
        for line in self._lines(limit=index.size):
            try:
                record = loads_safe(line)
            except ValueError:
                continue
            if (
                isinstance(record, dict)
                and record.get("generation") in committed
                and isinstance(record.get("first"), int)
                and isinstance(record.get("messages"), list)
            ):
                found.append(Generation(record["generation"], record["first"], record["messages"]))
        readable = {g.number for g in found}
        return found, [number for number in committed if number not in readable]

    def _append(self, line: bytes) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            view = memoryview(line)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)

    def _lines(self, *, limit: int) -> list[bytes]:
        """The archive's complete lines within its first ``limit`` bytes (the committed part)."""
        if limit <= 0:
            return []
        try:
            with open_regular(self.path) as handle:  # a FIFO in its place must not hang the run
                data = handle.read(limit)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise SessionError(f"cannot read the session's archive: {os_problem(exc)}") from None
        return [line + b"\n" for line in data.split(b"\n")[:-1]]

    def _sizes(self, index: Index) -> list[int]:
        """Each committed generation's line size, in order (from the file; zero for one that is gone)."""
        sizes = {_generation_of(line): len(line) for line in self._lines(limit=index.size)}
        return [sizes.get(entry[0], 0) for entry in index.spans]


CITATION_OPEN = "Archived originals"
"""How the citation starts. It is data only: no tool is named, so a core without ``recall`` (after a
rollback) offers nothing that fails; how to use it is in the ``recall`` tool's description."""
LEGACY_CITATION_OPENS = ("Recall: the original",)
"""How citations written by earlier cores started (taken off like today's before a compaction)."""


def citation(index: Index) -> str:
    """What a summary cites of the archive, as data: the spans it covers, their tool call ids, what is gone.

    Bounded (``MAX_CITATION_CHARS``) whatever the session's length, since it rides in every
    request: the newest spans are cited with every tool call id in them, in the compact form of
    ``call_ids.cite_ids`` (``call_0_{2..40}``), older ones as one range. A span is cited with all
    its ids or none.
    """
    if not index.spans and not index.dropped:
        return ""
    head = f"{CITATION_OPEN} of the messages this summary replaced, by span and tool call id:"
    cited: list[str] = []
    used = len(head)
    older = _merged(index.spans)
    while older:
        _number, first, last, ids = older[-1]
        line = _span(first, last)
        if ids:
            line += f" tool calls: {cite_ids(ids)}"
        if cited and used + len(line) > MAX_CITATION_CHARS:
            break
        cited.insert(0, line)
        used += len(line) + 1
        older.pop()
    lines = [head]
    if older:
        lines.append(f"[span {older[0][1]}-{older[-1][2]}] earlier messages (tool call ids not listed)")
    lines.extend(cited)
    if index.dropped:
        gone = ", ".join(f"{first}-{last}" if last > first else str(first) for first, last in index.dropped)
        lines.append(f"No longer archived (removed by the archive's size bound, or damaged): spans {gone}.")
    return "\n".join(lines)


def _merged(spans: list[list[Any]]) -> list[list[Any]]:
    """Adjacent generations without tool calls as one span: nothing to tell them apart by."""
    merged: list[list[Any]] = []
    for number, first, last, ids in spans:
        if merged and not ids and not merged[-1][3] and merged[-1][2] + 1 == first:
            merged[-1][2] = last
        else:
            merged.append([number, first, last, list(ids)])
    return merged


def _span(first: int, last: int) -> str:
    return f"[span {first}-{last}]" if last > first else f"[span {first}]"


def _add_dropped(dropped: list[list[int]], first: int, last: int) -> None:
    if last < first:
        return
    if dropped and dropped[-1][1] + 1 == first:
        dropped[-1][1] = last
    else:
        dropped.append([first, last])


def _generation_of(line: bytes) -> int | None:
    # The line starts with {"generation":N, (dumps_safe writes keys in insertion order).
    head = line[:40]
    prefix = b'{"generation":'
    if not head.startswith(prefix):
        return None
    digits = head[len(prefix) :].split(b",", 1)[0]
    return int(digits) if digits.isdigit() else None


def _positive(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else default


def _is_pair(value: Any) -> bool:
    return isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value)


def _is_span_entry(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) == 4
        and all(isinstance(v, int) for v in value[:3])
        and isinstance(value[3], list)
    )
