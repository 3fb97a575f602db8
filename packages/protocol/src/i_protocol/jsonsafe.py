"""Undecodable text in JSON: the project's one rule, used on the wire, in the registry and in sessions.

Python turns bytes that are not UTF-8 (a Latin-1 file name, argv, a stdin line) into lone
surrogates (``surrogateescape``: the byte 0xE9 becomes U+DCE9). orjson refuses them both ways, so
a folder named ``caf\\xe9`` used to stop everything. The rule:

- **writing**: a string with a lone surrogate is written as the JSON escape ``\\udce9`` — the bytes
  stay valid UTF-8 (the escape is ASCII), and nothing is lost; every other string as orjson writes it;
- **reading**: ``\\udXXX`` escapes of lone surrogates are accepted and give the same lone surrogate
  back; raw bytes that are not UTF-8 are never accepted (they are an error that says so);
- **showing** (to a model, a user, an error message): ``printable`` renders surrogate-escaped bytes
  as ``\\xNN``, like the core's tools do; ``dumps_printable`` writes JSON that way for a peer that
  needs strict Unicode (a model API), which is lossy and for display only;
- **sending to a worker**: a host never puts a lone surrogate in an event's data (most JSON libraries,
  orjson among them, refuse them, so one undecodable byte in a tool result used to fail every later
  call of a session); the request's context (the workspace path) keeps its escapes, since a worker
  must open that folder. ``without_surrogates`` gives the copy a worker sees, each lone surrogate as
  U+FFFD, and a map to the originals; ``restore_surrogates`` puts each original string back wherever
  the worker's answer carries it unchanged, so a history a worker passes through comes back lossless.

The fast path is orjson alone; the standard library's ``json`` is imported and used only for a
document that really holds a lone surrogate, with orjson's strictness kept (no NaN/Infinity, no
infinite numbers, no trailing commas).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

__all__ = [
    "dumps_printable",
    "dumps_safe",
    "loads_safe",
    "map_strings",
    "printable",
    "replace_surrogates",
    "restore_surrogates",
    "utf8_error",
    "without_surrogates",
]


def dumps_safe(value: Any, *, indent: bool = False) -> bytes:
    """JSON bytes of ``value`` (valid UTF-8); lone surrogates become ``\\uXXXX`` escapes, never an error.

    Anything else orjson refuses (an unserialisable object, an integer over 64 bits) still raises
    ``TypeError``.
    """
    try:
        return orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    except TypeError as exc:
        if "surrogates" not in str(exc):
            raise
    import json

    try:
        text = json.dumps(
            value,
            ensure_ascii=False,
            allow_nan=False,
            indent=2 if indent else None,
            separators=(",", ": ") if indent else (",", ":"),
        )
    except ValueError as exc:  # NaN or Infinity: orjson would have written null, json refuses
        raise TypeError(f"cannot encode {exc}") from None
    # The only characters UTF-8 cannot encode are lone surrogates, and they only occur inside JSON
    # strings: backslashreplace writes each as the six characters \udce9, which is its JSON escape.
    return text.encode("utf-8", "backslashreplace")


def dumps_printable(value: Any) -> bytes:
    """JSON bytes for a peer that needs strict Unicode (a model API): lone surrogates as ``printable``.

    Lossy on purpose, and only for display: ``caf\\udce9`` is sent as the text ``caf\\xe9``.
    """
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        if "surrogates" not in str(exc):
            raise
    return orjson.dumps(_printable_copy(value))


def _printable_copy(value: Any) -> Any:
    return map_strings(value, printable)


def map_strings(value: Any, change: Callable[[str], str]) -> Any:
    """A JSON-shaped ``value`` with ``change`` applied to every string in it, object keys included."""
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {change(k) if isinstance(k, str) else k: map_strings(v, change) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [map_strings(v, change) for v in value]
    return value


def replace_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; a valid pair becomes its character."""
    if text.isascii():  # constant time in CPython: most text needs no encoding round trip
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # utf-16 with surrogatepass joins valid pairs and flags only the lone halves.
        return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")
    return text


def without_surrogates(value: Any) -> tuple[Any, dict[str, str]]:
    """``value`` with each lone surrogate replaced by U+FFFD, and {replaced string: original}.

    The map holds only strings that changed and that one original alone maps to: when two
    originals give the same replaced text (or an original already equals it), the answer cannot
    say which was meant, so that text is not restored.
    """
    originals: dict[str, str] = {}
    ambiguous: set[str] = set()

    def clean(text: str) -> str:
        replaced = replace_surrogates(text)
        if replaced is text:
            if not text.isascii() and "\ufffd" in text:
                ambiguous.add(text)  # a real U+FFFD: the same text in the answer may be this one
            return text
        if originals.get(replaced, text) != text:
            ambiguous.add(replaced)
        originals[replaced] = text
        return replaced

    result = map_strings(value, clean)
    for text in ambiguous:
        originals.pop(text, None)
    return result, originals


def restore_surrogates(value: Any, originals: dict[str, str]) -> Any:
    """``value`` with every string that ``without_surrogates`` replaced, as it was (see there)."""
    if not originals:
        return value
    return map_strings(value, lambda text: originals.get(text, text))


def loads_safe(raw: bytes | bytearray | memoryview | str) -> Any:
    """Parse JSON like orjson, also accepting escaped lone surrogates (``"\\udce9"``).

    Raises ``orjson.JSONDecodeError`` (a ``ValueError``) for anything else orjson refuses,
    including raw bytes that are not UTF-8.
    """
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if not _has_surrogate_escape(raw):
            raise
        original = exc
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
    except UnicodeDecodeError:
        raise original from None
    import json

    try:
        return json.loads(text, parse_constant=_refuse_constant, parse_float=_finite_float, parse_int=_int_like_orjson)
    except ValueError as exc:
        message = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        position = exc.pos if isinstance(exc, json.JSONDecodeError) else 0
        raise orjson.JSONDecodeError(message, text, position) from None


def printable(text: str) -> str:
    """``text`` for display: surrogate-escaped bytes as ``\\xNN``, any other lone surrogate as ``\\udXXX``."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def utf8_error(raw: bytes | bytearray) -> str | None:
    """``"byte 0xe9 at offset 25"`` for the first byte of ``raw`` that is not UTF-8, else None."""
    try:
        bytes(raw).decode("utf-8")
    except UnicodeDecodeError as exc:
        return f"byte 0x{raw[exc.start]:02x} at offset {exc.start}"
    return None


def _has_surrogate_escape(raw: bytes | bytearray | memoryview | str) -> bool:
    import re

    pattern = r"\\u[dD][89a-fA-F]" if isinstance(raw, str) else rb"\\u[dD][89a-fA-F]"
    return re.search(pattern, raw if isinstance(raw, str) else bytes(raw)) is not None  # type: ignore[arg-type]


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise ValueError(f"number {text} is infinity when parsed as double")
    return value


def _int_like_orjson(text: str) -> int | float:
    # orjson reads an integer outside the 64-bit range as a float; keep that so both paths agree.
    value = int(text)
    return value if -(2**63) <= value < 2**64 else _finite_float(text)
