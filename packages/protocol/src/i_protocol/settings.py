"""Typed field checks for settings files, with one message shape that names the file and the field.

Public API, versioned with the protocol: the core and every worker check their settings with
these, so that the same mistake reads the same everywhere::

    memory.json: max_entries must be an integer from 1 to 10000, got "x"
    /cfg/web.json: search.count_param must be a non-empty string, got 3
    /cfg/web.json: search: unknown field(s) endpoint; known fields: url, method

- ``file`` is the file the object came from (a path, or a name such as ``web.json``), or None for
  an object that is not a file of its own (a request's ``budget``); ``at`` is where the object
  sits inside it (``search``, ``search.results``), joined to the field's name with a dot.
- ``require_*`` needs the field; ``optional_*`` gives ``default`` when the field is absent or
  ``null`` (one rule for every settings file: ``null`` means "not set").
- The value is echoed after ``got`` as JSON (clipped), except a string in a string or list field:
  such a value may be a URL with a key or a header, so only its type is said.

Every failure is a ``SettingsError`` (a ``ConfigError``); a package maps it to its own error
type at its boundary where its callers need that type.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from typing import Any, TypeVar

from .errors import SettingsError
from .jsonsafe import dumps_printable

__all__ = [
    "field_error",
    "optional_bool",
    "optional_choice",
    "optional_int",
    "optional_number",
    "optional_object",
    "optional_str",
    "optional_str_list",
    "reject_unknown",
    "require_argv",
    "require_bool",
    "require_choice",
    "require_int",
    "require_number",
    "require_object",
    "require_str",
    "require_str_list",
]

_D = TypeVar("_D")
_ABSENT: Any = object()
_GOT_CHARS = 60


def field_error(key: str, expected: str, *, file: str | None, at: str = "", got: Any = _ABSENT) -> SettingsError:
    """The error for field ``key``: ``<file>: <at>.<key> must be <expected>[, got <value>]``.

    For checks of a package's own (a URL scheme, a header name) in the same shape as the rest.
    """
    message = f"{_prefix(file)}{at + '.' if at else ''}{key} must be {expected}"
    return SettingsError(message if got is _ABSENT else f"{message}, got {_shown(got)}")


def reject_unknown(obj: Mapping[str, Any], allowed: Collection[str], *, file: str | None, at: str = "") -> None:
    """Refuse fields not in ``allowed`` (listed in its order; a set is sorted), so a typo is never ignored."""
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        known = sorted(allowed) if isinstance(allowed, set | frozenset) else list(allowed)
        raise SettingsError(
            f"{_prefix(file)}{at + ': ' if at else ''}unknown field(s) {', '.join(unknown)}; "
            f"known fields: {', '.join(known)}"
        )


# -- scalars -------------------------------------------------------------------------------------


def require_bool(obj: Mapping[str, Any], key: str, *, file: str | None, at: str = "") -> bool:
    """The field as a JSON boolean."""
    value = obj.get(key)
    if not isinstance(value, bool):
        raise field_error(key, "true or false", file=file, at=at, got=value)
    return value


def optional_bool(obj: Mapping[str, Any], key: str, default: _D, *, file: str | None, at: str = "") -> bool | _D:
    """The field as a boolean, or ``default`` when it is absent or null."""
    return default if obj.get(key) is None else require_bool(obj, key, file=file, at=at)


def require_int(
    obj: Mapping[str, Any],
    key: str,
    *,
    file: str | None,
    at: str = "",
    minimum: int | None = None,
    maximum: int | None = None,
) -> int:
    """The field as an integer (not a boolean, not 2.0) within ``[minimum, maximum]``."""
    value = obj.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, int)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
    ):
        raise field_error(key, "an integer" + _int_range(minimum, maximum), file=file, at=at, got=value)
    return value


def optional_int(
    obj: Mapping[str, Any],
    key: str,
    default: _D,
    *,
    file: str | None,
    at: str = "",
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | _D:
    """The field as a bounded integer, or ``default`` when it is absent or null."""
    if obj.get(key) is None:
        return default
    return require_int(obj, key, file=file, at=at, minimum=minimum, maximum=maximum)


def require_number(
    obj: Mapping[str, Any],
    key: str,
    *,
    file: str | None,
    at: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
) -> float:
    """The field as a finite number within ``[minimum, maximum]`` (or ``[minimum, below)``)."""
    value = obj.get(key)
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or (minimum is not None and value < minimum)
        or (maximum is not None and value > maximum)
        or (below is not None and value >= below)
    ):
        raise field_error(key, "a number" + _number_range(minimum, maximum, below), file=file, at=at, got=value)
    return float(value)


def optional_number(
    obj: Mapping[str, Any],
    key: str,
    default: _D,
    *,
    file: str | None,
    at: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    below: float | None = None,
) -> float | _D:
    """The field as a bounded finite number, or ``default`` when it is absent or null."""
    if obj.get(key) is None:
        return default
    return require_number(obj, key, file=file, at=at, minimum=minimum, maximum=maximum, below=below)


def require_choice(
    obj: Mapping[str, Any], key: str, choices: Collection[str], *, file: str | None, at: str = ""
) -> str:
    """The field as one of ``choices`` (compared exactly)."""
    value = obj.get(key)
    if not isinstance(value, str) or value not in choices:
        raise field_error(key, f"one of {', '.join(choices)}", file=file, at=at, got=value)
    return value


def optional_choice(
    obj: Mapping[str, Any], key: str, choices: Collection[str], default: _D, *, file: str | None, at: str = ""
) -> str | _D:
    """The field as one of ``choices``, or ``default`` when it is absent or null."""
    return default if obj.get(key) is None else require_choice(obj, key, choices, file=file, at=at)


def require_str(
    obj: Mapping[str, Any],
    key: str,
    *,
    file: str | None,
    at: str = "",
    min_chars: int = 1,
    max_chars: int | None = None,
    one_line: bool = False,
) -> str:
    """The field as a string of ``min_chars`` to ``max_chars`` characters; ``one_line``: no CR or LF."""
    value = obj.get(key)
    if (
        not isinstance(value, str)
        or len(value) < min_chars
        or (max_chars is not None and len(value) > max_chars)
        or (one_line and ("\n" in value or "\r" in value))
    ):
        expected = _string_kind(min_chars, max_chars, one_line)
        if isinstance(value, str):
            raise field_error(key, expected, file=file, at=at)
        raise field_error(key, expected, file=file, at=at, got=value)
    return value


def optional_str(
    obj: Mapping[str, Any],
    key: str,
    default: _D,
    *,
    file: str | None,
    at: str = "",
    min_chars: int = 1,
    max_chars: int | None = None,
    one_line: bool = False,
) -> str | _D:
    """The field as a checked string, or ``default`` when it is absent or null."""
    if obj.get(key) is None:
        return default
    return require_str(obj, key, file=file, at=at, min_chars=min_chars, max_chars=max_chars, one_line=one_line)


# -- containers ----------------------------------------------------------------------------------


def require_object(obj: Mapping[str, Any], key: str, *, file: str | None, at: str = "") -> dict[str, Any]:
    """The field as a JSON object."""
    value = obj.get(key)
    if not isinstance(value, dict):
        raise field_error(key, "an object", file=file, at=at, got=value)
    return value


def optional_object(
    obj: Mapping[str, Any], key: str, default: _D, *, file: str | None, at: str = ""
) -> dict[str, Any] | _D:
    """The field as a JSON object, or ``default`` when it is absent or null."""
    return default if obj.get(key) is None else require_object(obj, key, file=file, at=at)


def require_str_list(
    obj: Mapping[str, Any], key: str, *, file: str | None, at: str = "", nonempty_items: bool = False
) -> list[str]:
    """The field as an array of strings (each non-empty with ``nonempty_items``)."""
    value = obj.get(key)
    if not isinstance(value, list) or not all(isinstance(item, str) and (item or not nonempty_items) for item in value):
        expected = "an array of non-empty strings" if nonempty_items else "an array of strings"
        raise field_error(key, expected, file=file, at=at, got=_type_only(value))
    return list(value)


def optional_str_list(
    obj: Mapping[str, Any], key: str, default: _D, *, file: str | None, at: str = "", nonempty_items: bool = False
) -> list[str] | _D:
    """The field as an array of strings, or ``default`` when it is absent or null."""
    if obj.get(key) is None:
        return default
    return require_str_list(obj, key, file=file, at=at, nonempty_items=nonempty_items)


def require_argv(obj: Mapping[str, Any], key: str, *, file: str | None, at: str = "") -> list[str]:
    """The field as a program's argv: a non-empty array of strings, never a shell command line."""
    value = obj.get(key)
    if isinstance(value, str):
        raise field_error(key, "an argv array, not a shell string", file=file, at=at)
    if not isinstance(value, list) or not value or not all(isinstance(item, str) for item in value):
        raise field_error(key, "a non-empty array of strings", file=file, at=at, got=_type_only(value))
    return list(value)


# -- wording -------------------------------------------------------------------------------------


class _Type:
    """A value shown by its JSON type only (``got a string``): a string may be a secret."""

    def __init__(self, name: str) -> None:
        self.name = name


def _type_only(value: Any) -> Any:
    return _Type("a string") if isinstance(value, str) else value


def _shown(value: Any) -> str:
    if isinstance(value, _Type):
        return value.name
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    try:
        text = dumps_printable(value).decode("utf-8")
    except TypeError:
        text = repr(value)
    return text if len(text) <= _GOT_CHARS else text[: _GOT_CHARS - 1] + "…"


def _prefix(file: str | None) -> str:
    return f"{file}: " if file else ""


def _int_range(minimum: int | None, maximum: int | None) -> str:
    if minimum is not None and maximum is not None:
        return f" from {minimum} to {maximum}"
    if minimum is not None:
        return f" ≥ {minimum}"
    return "" if maximum is None else f" ≤ {maximum}"


def _number_range(minimum: float | None, maximum: float | None, below: float | None) -> str:
    if minimum is None and maximum is None and below is None:
        return ""
    low = "(-inf" if minimum is None else f"[{minimum}"
    high = f"{below})" if below is not None else "inf)" if maximum is None else f"{maximum}]"
    return f" in {low}, {high}"


def _string_kind(min_chars: int, max_chars: int | None, one_line: bool) -> str:
    kind = "one-line string" if one_line else "string"
    if max_chars is not None:
        return f"a {kind} of {min_chars} to {max_chars} characters"
    if min_chars == 1:
        return f"a non-empty {kind}"
    if min_chars > 1:
        return f"a {kind} of at least {min_chars} characters"
    return f"a {kind}"
