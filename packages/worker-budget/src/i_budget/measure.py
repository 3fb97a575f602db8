"""One pass over a history: wire bytes, images and prefix fingerprints of each message."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from i_protocol.history import IMAGE_PART_TYPES, wire_bytes

from .density import ZERO, Classes, add, classify, sub
from .errors import BudgetError

ROLES = frozenset({"system", "user", "assistant", "tool"})
REPLAY_FIELDS = frozenset({"_anthropic_content", "_responses_output"})
"""Top-level ``_`` fields the protocol adapters replay on the wire: they cost tokens and are fingerprinted."""

FINGERPRINT_PREFIX = "sha256:"
_SORTED = orjson.OPT_SORT_KEYS


@dataclass(slots=True)
class HistoryMeasure:
    """Wire-byte figures of one history, split at ``boundary`` (the anchored prefix, else 0).

    Bytes are those of ``orjson.dumps(wire views, OPT_SORT_KEYS)`` of each part (brackets and
    commas included) minus the serialized image parts, which are priced by ``image_tokens``.
    """

    views: list[dict[str, Any]]
    boundary: int
    prefix_bytes: int
    total_bytes: int
    images: dict[int, tuple[int, int]]
    prefix_fingerprint: str | None
    fingerprint: str
    new_classes: Classes
    """Class bytes of ``views[boundary:]`` without image parts (ZERO unless asked for)."""
    head: bytes

    def prefix_classes(self) -> Classes:
        """Class bytes of ``views[:boundary]`` without image parts (measured on demand)."""
        if not self.boundary:
            return ZERO
        images = ZERO
        for index in self.images:
            if index < self.boundary:
                images = add(images, _image_classes(self.views[index]))
        return sub(classify(self.head[1:-1]), images)

    def image_count(self, start: int = 0) -> int:
        """Images in messages ``start`` and later."""
        return sum(count for index, (count, _size) in self.images.items() if index >= start)

    def image_bytes(self) -> int:
        """Serialized bytes of every image part."""
        return sum(size for _count, size in self.images.values())

    def message_bytes(self, index: int) -> int:
        """Bytes of one message (image parts excluded)."""
        return wire_bytes(self.views[index]) - self.images.get(index, (0, 0))[1]

    def message_classes(self, index: int) -> Classes:
        """Class bytes of one message (image parts excluded), with its separating comma."""
        raw = orjson.dumps(self.views[index], option=_SORTED) + b","
        if index not in self.images:
            return classify(raw)
        return sub(classify(raw), _image_classes(self.views[index]))


def wire_view(message: dict[str, Any]) -> dict[str, Any]:
    """The message as it goes on the wire: private ``_`` fields dropped, replay fields kept."""
    for key in message:
        if key[:1] == "_" and key not in REPLAY_FIELDS:
            return {k: v for k, v in message.items() if k[:1] != "_" or k in REPLAY_FIELDS}
    return message


def _dump(value: Any, where: str) -> bytes:
    try:
        return orjson.dumps(value, option=_SORTED)
    except (orjson.JSONEncodeError, TypeError) as exc:
        raise BudgetError(f"{where} cannot be measured as JSON: {exc}") from None


def _image_parts(view: dict[str, Any]) -> list[bytes]:
    """The serialized image parts anywhere in the message."""
    parts: list[bytes] = []
    stack: list[Any] = [view]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            if node.get("type") in IMAGE_PART_TYPES:
                parts.append(orjson.dumps(node, option=_SORTED))
                continue
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return parts


def _images(view: dict[str, Any]) -> tuple[int, int]:
    """Count image parts anywhere in the message and the serialized bytes they take."""
    parts = _image_parts(view)
    return len(parts), sum(map(len, parts))


def _image_classes(view: dict[str, Any]) -> Classes:
    total = ZERO
    for part in _image_parts(view):
        total = add(total, classify(part))
    return total


def check_message(index: int, message: object) -> dict[str, Any]:
    """Validate the shape the budget relies on: an object with a known role."""
    if not isinstance(message, dict):
        raise BudgetError(f"history[{index}] must be an object, got {type(message).__name__}")
    role = message.get("role")
    if role not in ROLES:
        raise BudgetError(f"history[{index}].role {role!r} is unknown; expected one of: assistant, system, tool, user")
    return message


def _wire_views(history: list[Any]) -> list[dict[str, Any]]:
    # Whole-list comprehensions and one key union instead of a Python loop per message: a
    # history can hold millions of tokens in thousands of messages.
    try:
        if ROLES.issuperset([message.get("role") for message in history]):
            keys: set[str] = set().union(*history)
        else:
            keys = set()
            for index, message in enumerate(history):
                check_message(index, message)
    except (AttributeError, TypeError):
        for index, message in enumerate(history):
            check_message(index, message)
        raise
    private = {key for key in keys if key[:1] == "_" and key not in REPLAY_FIELDS}
    if not private:
        return history
    return [m if private.isdisjoint(m) else {k: v for k, v in m.items() if k not in private} for m in history]


def measure_history(history: object, prefix: int | None = None, *, count_classes: bool = True) -> HistoryMeasure:
    """Measure a history in one pass; ``prefix`` asks for the fingerprint of ``history[:prefix]`` too.

    The fingerprint of ``history[:k]`` is the SHA-256 of ``orjson.dumps(wire views of history[:k],
    OPT_SORT_KEYS)`` without its closing ``]``, so the fingerprint of a longer history extends it.
    ``count_classes`` measures the class bytes of the messages after the prefix.
    """
    if not isinstance(history, list):
        raise BudgetError(f"history must be a list of messages, got {type(history).__name__}")
    views = _wire_views(history)
    boundary = prefix if prefix is not None and 0 < prefix <= len(views) else 0
    head = _dump(views[:boundary], "history") if boundary else b"[]"
    tail = _dump(views[boundary:], "history")
    digest = hashlib.sha256()
    prefix_fp: str | None = None
    if boundary:
        digest.update(memoryview(head)[:-1])
        prefix_fp = FINGERPRINT_PREFIX + digest.hexdigest()
        if len(tail) > 2:
            digest.update(b",")
            digest.update(memoryview(tail)[1:-1])
    else:
        digest.update(memoryview(tail)[:-1])
    replay = not REPLAY_FIELDS.isdisjoint(set().union(*views)) if views else False
    images: dict[int, tuple[int, int]] = {}
    for index, view in enumerate(views):
        if type(view.get("content")) is list or (replay and not REPLAY_FIELDS.isdisjoint(view)):
            count, size = _images(view)
            if count:
                images[index] = (count, size)
    head_images = sum(size for index, (_c, size) in images.items() if index < boundary)
    tail_images = sum(size for index, (_c, size) in images.items() if index >= boundary)
    head_bytes = len(head) - head_images if boundary else 0
    new_classes = ZERO
    if count_classes:
        new_classes = classify(tail[1:-1])
        for index in images:
            if index >= boundary:
                new_classes = sub(new_classes, _image_classes(views[index]))
    # Joining "[a,b]" and "[c]" gives "[a,b,c]": one byte less, so the split never changes the total.
    joined = len(tail) - 1 if boundary and len(tail) > 2 else (0 if boundary else len(tail))
    return HistoryMeasure(
        views=views,
        boundary=boundary,
        prefix_bytes=head_bytes,
        total_bytes=head_bytes + joined - tail_images,
        images=images,
        prefix_fingerprint=prefix_fp,
        fingerprint=FINGERPRINT_PREFIX + digest.hexdigest(),
        new_classes=new_classes,
        head=head,
    )


def history_fingerprint(history: list[Any], upto: int | None = None) -> str:
    """Fingerprint of ``history[:upto]`` (all of it by default), as anchors record it."""
    count = len(history) if upto is None else upto
    return measure_history(history[:count], count_classes=False).fingerprint


def measure_tools(tools: object) -> tuple[Classes, str]:
    """Class bytes and the fingerprint of the model-facing tool schemas."""
    if tools is None:
        tools = []
    if not isinstance(tools, list):
        raise BudgetError(f"tools must be a list of tool schemas, got {type(tools).__name__}")
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            raise BudgetError(f"tools[{index}] must be an object with a string name")
    if not tools:
        return ZERO, FINGERPRINT_PREFIX + hashlib.sha256(b"[]").hexdigest()
    raw = _dump(tools, "tools")
    # Each schema travels wrapped as {"type":"function","function":{...}}: 30 bytes more per tool
    # (22 of JSON syntax, 8 of the two key words).
    word, ids, symbol, other = classify(raw)
    classes = (word + 8 * len(tools), ids, symbol + 22 * len(tools), other)
    return classes, FINGERPRINT_PREFIX + hashlib.sha256(raw).hexdigest()
