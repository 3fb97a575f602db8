"""Tool call ids unique across the history, made so where the model's reply enters it.

Some Responses-compatible services number each response's calls from ``call_0``, so two replies
carry the same id; every wire matches a result to its call by id alone, and ``recall`` finds calls
by id. A reply's call whose id is already in the history (or earlier in the same reply) is renamed
``<id>_<n>`` (the smallest free n from 2) in the call and in the replayed provider state that names
it (``_anthropic_content`` tool_use blocks); the original is kept in the call's ``_original_id``.
The result message is built from the call's id, so it follows.
"""

from __future__ import annotations

from collections.abc import Iterable
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


def unique_call_ids(message: dict[str, Any], taken: set[str]) -> dict[str, str]:
    """Rename, in place, the calls of ``message`` whose id is in ``taken`` or repeats one before it;
    returns {new id: original id}. ``taken`` gains every id of the message."""
    renamed: dict[str, str] = {}
    for call in message.get("tool_calls") or ():
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        original = call["id"]
        if original in taken:
            number = 2
            while f"{original}_{number}" in taken:
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
