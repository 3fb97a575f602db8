"""The rules a memory key or value must keep: size, characters, no lone surrogates, no credentials."""

from __future__ import annotations

import unicodedata

import orjson

from .errors import MemoryStoreError
from .settings import Limits

_REFERENCE_HINT = (
    "Memory is plain text on disk and is shown to the model every turn, so it must never hold a secret. "
    "Store a reference instead: the name of the environment variable (e.g. OPENAI_API_KEY) or the path "
    "of the file that holds it."
)


def quote(text: str) -> str:
    """``text`` as a JSON string literal, for messages (shows whitespace and odd characters)."""
    try:
        return orjson.dumps(text).decode()
    except TypeError:  # lone surrogates: orjson refuses them, repr does not
        return repr(text)


def lone_surrogate(text: str) -> int | None:
    """Index of the first lone surrogate in ``text`` (left by a bad decode), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def _check_unicode(tool: str, what: str, text: str) -> None:
    index = lone_surrogate(text)
    if index is not None:
        raise MemoryStoreError(
            f"{tool}: the {what} contains a lone surrogate U+{ord(text[index]):04X} at character {index} "
            "(left over from decoding bytes that were not valid UTF-8); it cannot be stored as UTF-8 JSON. "
            "Replace it (e.g. with U+FFFD) or escape the original bytes as text, then try again."
        )


def check_key(tool: str, key: object, limits: Limits) -> str:
    """Validate a key argument: a string of 1..max_key_chars printable characters, trimmed."""
    if key is None:
        raise MemoryStoreError(f"{tool}: 'key' is required")
    if not isinstance(key, str):
        raise MemoryStoreError(f"{tool}: 'key' must be a string, got {type(key).__name__}")
    if not key:
        raise MemoryStoreError(f"{tool}: 'key' must not be empty")
    _check_unicode(tool, "key", key)
    if len(key) > limits.max_key_chars:
        raise MemoryStoreError(
            f"{tool}: the key has {len(key)} characters; the limit is {limits.max_key_chars}. Use a shorter name."
        )
    for index, char in enumerate(key):
        if unicodedata.category(char) == "Cc":
            raise MemoryStoreError(
                f"{tool}: the key contains control character U+{ord(char):04X} at character {index}; "
                "keys are single-line names without control characters"
            )
    if key.strip() != key:
        raise MemoryStoreError(f"{tool}: the key {quote(key)} starts or ends with whitespace; trim it")
    return key


def check_value(tool: str, value: object, limits: Limits) -> str:
    """Validate a value argument: a non-empty string of at most max_value_chars characters."""
    if value is None:
        raise MemoryStoreError(f"{tool}: 'value' is required")
    if not isinstance(value, str):
        raise MemoryStoreError(
            f"{tool}: 'value' must be a string, got {type(value).__name__}; write structured data as JSON text"
        )
    if not value:
        raise MemoryStoreError(f"{tool}: 'value' must not be empty; use memory_delete to remove an entry")
    _check_unicode(tool, "value", value)
    if len(value) > limits.max_value_chars:
        raise MemoryStoreError(
            f"{tool}: the value has {len(value)} characters; the limit is {limits.max_value_chars}. "
            "Store a shorter summary, or a reference to a file that holds the details."
        )
    return value


def check_prefix(tool: str, prefix: object, limits: Limits) -> str:
    """Validate an optional list prefix (empty means every key)."""
    if prefix is None:
        return ""
    if not isinstance(prefix, str):
        raise MemoryStoreError(f"{tool}: 'prefix' must be a string, got {type(prefix).__name__}")
    _check_unicode(tool, "prefix", prefix)
    if len(prefix) > limits.max_key_chars:
        raise MemoryStoreError(f"{tool}: the prefix is longer than the {limits.max_key_chars}-character key limit")
    return prefix


def refuse_credentials(tool: str, what: str, text: str) -> None:
    """Raise when ``text`` looks like it holds a secret; the message never repeats the secret."""
    # The secret table compiles ~30 patterns (~5 ms): only a change needs it, not before_turn.
    from i_protocol.secrets import DESCRIPTIONS, find_secrets

    found = find_secrets(text)
    if found:
        raise MemoryStoreError(
            f"{tool}: refused: the {what} looks like it contains {DESCRIPTIONS[found[0].name]} "
            f"(at character {found[0].start}). " + _REFERENCE_HINT
        )
