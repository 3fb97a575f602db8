"""Raw spans of JSON values, so a value can be carried byte for byte as the producer wrote it."""

from __future__ import annotations

import re

_WS = re.compile(r"[ \t\r\n]*")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_STRUCTURAL = re.compile(r'["{}\[\]]')
_SCALAR = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false|null")


class _Malformed(Exception):
    pass


def value_span(text: str, path: list[str | int]) -> tuple[int, int] | None:
    """``(start, end)`` of the value at ``path`` (object keys / array indexes) in JSON ``text``.

    None when the text is not well-formed JSON or the path does not exist. With duplicate
    keys the last one wins, as in ``json.loads``.
    """
    try:
        start = _WS.match(text, 0).end()  # type: ignore[union-attr]
        return _find(text, start, path)
    except (_Malformed, IndexError):
        return None


def keyed_value_span(text: str, key: str, expected: object, path: list[str | int]) -> tuple[int, int] | None:
    """Span of the value of ``key`` equal to ``expected``, or None when no such span exists.

    The fast path finds ``"key"`` with ``str.find`` (escaped quotes inside strings can never
    match) and accepts the one occurrence whose value parses equal to ``expected``; anything
    ambiguous takes the full walk along ``path``, whose value must parse equal too: a raw span
    that differs from ``expected`` (a producer-declared omission inside it) is never returned.
    """
    import orjson

    needle = orjson.dumps(key).decode()
    found: list[tuple[int, int]] = []
    index = text.find(needle)
    while index >= 0 and len(found) < 2:
        try:
            colon = _WS.match(text, index + len(needle)).end()  # type: ignore[union-attr]
            if text[colon] == ":":
                start = _WS.match(text, colon + 1).end()  # type: ignore[union-attr]
                end = _skip(text, start)
                if orjson.loads(text[start:end]) == expected:
                    found.append((start, end))
        except (_Malformed, IndexError, orjson.JSONDecodeError):
            pass
        index = text.find(needle, index + 1)
    if len(found) == 1:
        return found[0]
    span = value_span(text, [*path, key])
    if span is None:
        return None
    try:  # the walk finds the value at ``path``; it is this value only if it parses equal
        return span if orjson.loads(text[span[0] : span[1]]) == expected else None
    except orjson.JSONDecodeError:
        return None


def _find(text: str, pos: int, path: list[str | int]) -> tuple[int, int] | None:
    if not path:
        return pos, _skip(text, pos)
    head, rest = path[0], path[1:]
    char = text[pos]
    if char == "{" and isinstance(head, str):
        found: tuple[int, int] | None = None
        for key, value_start in _members(text, pos):
            if key == head:
                found = _find(text, value_start, rest)
        return found
    if char == "[" and isinstance(head, int):
        for index, value_start in enumerate(_elements(text, pos)):
            if index == head:
                return _find(text, value_start, rest)
        return None
    return None


def _members(text: str, pos: int) -> list[tuple[str, int]]:
    import json

    out: list[tuple[str, int]] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos] == "}":
        return out
    while True:
        match = _STRING.match(text, pos)
        if match is None:
            raise _Malformed
        raw_key = match.group(0)
        key = raw_key[1:-1] if "\\" not in raw_key else json.loads(raw_key)
        pos = _WS.match(text, match.end()).end()  # type: ignore[union-attr]
        if text[pos] != ":":
            raise _Malformed
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
        out.append((key, pos))
        pos = _WS.match(text, _skip(text, pos)).end()  # type: ignore[union-attr]
        if text[pos] == "}":
            return out
        if text[pos] != ",":
            raise _Malformed
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def _elements(text: str, pos: int) -> list[int]:
    out: list[int] = []
    pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
    if text[pos] == "]":
        return out
    while True:
        out.append(pos)
        pos = _WS.match(text, _skip(text, pos)).end()  # type: ignore[union-attr]
        if text[pos] == "]":
            return out
        if text[pos] != ",":
            raise _Malformed
        pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]


def _skip(text: str, pos: int) -> int:
    """End offset of the value starting at ``pos``."""
    char = text[pos]
    if char == '"':
        match = _STRING.match(text, pos)
        if match is None:
            raise _Malformed
        return match.end()
    if char in "{[":
        depth = 0
        while True:
            # Jump straight to the next structural character or string.
            found = _STRUCTURAL.search(text, pos)
            if found is None:
                raise _Malformed
            pos = found.start()
            char = text[pos]
            if char == '"':
                match = _STRING.match(text, pos)
                if match is None:
                    raise _Malformed
                pos = match.end()
                continue
            depth += 1 if char in "{[" else -1
            pos += 1
            if depth == 0:
                return pos
    match = _SCALAR.match(text, pos)
    if match is None:
        raise _Malformed
    return match.end()
