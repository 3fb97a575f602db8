"""Tool call ids unique across the history, made so where the model's reply enters it.

Some Responses-compatible services number each response's calls from ``call_0``, so two replies
carry the same id; every wire matches a result to its call by id alone, and ``recall`` finds calls
by id. A reply's call whose id is already in the history, in the session's archive (the calls a
compaction replaced, which ``recall`` still finds by id) or earlier in the same reply is renamed
``<id>_<n>`` (the smallest free n from 2) in the call and in the replayed provider state that names
it (``_anthropic_content`` tool_use blocks); the original is kept in the call's ``_original_id``.
The result message is built from the call's id, so it follows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable
from typing import Any


def history_call_ids(history: Iterable[dict[str, Any]]) -> set[str]:
    """Every tool call id the history's assistant messages made and its tool messages answered."""
    seen: set[str] = set()
    for message in history:
        if not isinstance(message, dict):
            continue
        if isinstance(message.get("tool_call_id"), str):
            seen.add(message["tool_call_id"])
        for call in message.get("tool_calls") or ():
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                seen.add(call["id"])
    return seen


def unique_call_ids(
    message: dict[str, Any], taken: set[str], archived: Collection[str] = frozenset()
) -> dict[str, str]:
    """Rename, in place, the calls of ``message`` whose id is in ``taken`` or ``archived`` or repeats
    one before it; returns {new id: original id}. ``taken`` gains every id of the message."""
    renamed: dict[str, str] = {}
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        original = call["id"]
        if original in taken or original in archived:
            number = 2
            while f"{original}_{number}" in taken or f"{original}_{number}" in archived:
                number += 1
            call["id"] = f"{original}_{number}"
            call["_original_id"] = original
            renamed[call["id"]] = original
        taken.add(call["id"])
    if renamed:
        _rename_replay(message, renamed)
    return renamed


def _rename_replay(message: dict[str, Any], renamed: dict[str, str]) -> None:
    """The same renaming in the provider state replayed with the message: Anthropic's tool_use blocks,
    matched in order (a reply may repeat an id, so each block takes the next renaming of its id)."""
    blocks = message.get("_anthropic_content")
    if not isinstance(blocks, list):
        return
    queue: dict[str, list[str]] = {}
    for call in message.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            queue.setdefault(str(call.get("_original_id", call["id"])), []).append(call["id"])
    for block in blocks:
        block_id = block.get("id") if isinstance(block, dict) and block.get("type") == "tool_use" else None
        if isinstance(block_id, str) and queue.get(block_id):
            block["id"] = queue[block_id].pop(0)


# -- the compact form a compaction summary cites them in ---------------------------------------

_BARE = re.compile(r"[A-Za-z0-9_.:/+=@#-]+")
_NUMBERED = re.compile(r"(.*?)(0|[1-9][0-9]*)")
_ITEM = re.compile(
    r'"(?:[^"\\]|\\.)*"|([A-Za-z0-9_.:/+=@#-]*)\{(0|[1-9][0-9]*)\.\.(0|[1-9][0-9]*)\}|[A-Za-z0-9_.:/+=@#-]+'
)
MIN_RUN = 3
"""Consecutive numbered ids written as one run (``call_{3..9}``) from this many on."""


def cite_ids(ids: list[str]) -> str:
    """``ids`` in call order, compact and reversible (``parse_cited_ids``): items joined by ``", "``.

    An item is an id as it is (letters, digits and ``_.:/+=@#-``), an id with any other character
    as a JSON string (``"call 7"``), or a run ``STEM{A..B}``: the ids STEM+A, STEM+A+1, ..., STEM+B,
    written for ``MIN_RUN`` or more consecutive ids that share a stem and end in consecutive
    decimal numbers (no leading zeros, the stem not ending in a digit).
    """
    items: list[str] = []
    position = 0
    while position < len(ids):
        numbered = _numbered(ids[position])
        length = _run_length(ids, position, numbered)
        if numbered is not None and length >= MIN_RUN:
            stem, first = numbered
            items.append(f"{stem}{{{first}..{first + length - 1}}}")
            position += length
            continue
        items.append(_item(ids[position]))
        position += 1
    return ", ".join(items)


def parse_cited_ids(text: str) -> list[str]:
    """The ids ``cite_ids`` wrote in ``text``; a ValueError when ``text`` is not in that form."""
    ids: list[str] = []
    position = 0
    while position < len(text):
        match = _ITEM.match(text, position)
        if match is None:
            raise ValueError(f"not a cited tool call id at character {position}: {text[position : position + 20]!r}")
        item = match.group(0)
        if item.startswith('"'):
            ids.append(json.loads(item))
        elif match.group(2) is not None:
            stem, first, last = match.group(1), int(match.group(2)), int(match.group(3))
            if last < first:
                raise ValueError(f"the run {item!r} runs backwards")
            ids.extend(f"{stem}{number}" for number in range(first, last + 1))
        else:
            ids.append(item)
        position = match.end()
        if position < len(text):
            if not text.startswith(", ", position):
                raise ValueError(f"expected ', ' after {item!r} at character {position}")
            position += 2
            if position == len(text):
                raise ValueError("the list ends with a separator")
    return ids


def _item(call_id: str) -> str:
    if _BARE.fullmatch(call_id):
        return call_id
    return json.dumps(call_id)  # ASCII: a lone surrogate or a control character is escaped too


def _numbered(call_id: str) -> tuple[str, int] | None:
    """``(stem, number)`` of an id written bare that ends in a decimal number without leading zeros."""
    if not _BARE.fullmatch(call_id):
        return None
    match = _NUMBERED.fullmatch(call_id)
    if match is None or match.group(1)[-1:].isdigit():
        return None
    return match.group(1), int(match.group(2))


def _run_length(ids: list[str], position: int, first: tuple[str, int] | None) -> int:
    """How many ids from ``position`` on continue the numbering of ``first`` (its stem and number)."""
    if first is None:
        return 1
    stem, number = first
    length = 1
    while position + length < len(ids) and _numbered(ids[position + length]) == (stem, number + length):
        length += 1
    return length
