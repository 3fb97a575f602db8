"""The four memory tools: check the model's arguments, act on the store, answer in text."""

from __future__ import annotations

from typing import Any

import orjson

from .entry import check_key, check_prefix, check_value, quote, refuse_credentials
from .errors import MemoryStoreError
from .store import MemoryStore, total_bytes

PREVIEW_CHARS = 120


def _arguments(tool: str, arguments: dict[str, Any], allowed: tuple[str, ...]) -> None:
    # The workspace and paths come from the request context only; a stray argument is refused, not ignored.
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        raise MemoryStoreError(
            f"{tool}: unknown argument(s) {', '.join(map(quote, unknown))}; expected: {', '.join(allowed) or 'none'}"
        )


def _usage(store: MemoryStore, entries: dict[str, str]) -> str:
    limits = store.limits
    return (
        f"Memory: {len(entries)} of {limits.max_entries} entries, "
        f"{total_bytes(entries)} of {limits.max_total_bytes} bytes."
    )


def memory_get(arguments: dict[str, Any], store: MemoryStore) -> str:
    """The stored value of ``key``, exactly; a missing key is an error."""
    _arguments("memory_get", arguments, ("key",))
    key = check_key("memory_get", arguments.get("key"), store.limits)
    entries = store.entries()
    if key not in entries:
        raise MemoryStoreError(
            f"memory_get: no entry named {quote(key)} ({len(entries)} entries exist; memory_list shows them)"
        )
    return entries[key]


def memory_set(arguments: dict[str, Any], store: MemoryStore) -> str:
    """Store ``value`` under ``key`` after the key, value and credential checks."""
    _arguments("memory_set", arguments, ("key", "value"))
    key = check_key("memory_set", arguments.get("key"), store.limits)
    value = check_value("memory_set", arguments.get("value"), store.limits)
    refuse_credentials("memory_set", "key", key)
    refuse_credentials("memory_set", "value", value)
    change = store.set(key, value)
    return f"{change.status} {quote(key)} ({len(value)} characters). {_usage(store, change.entries)}"


def memory_delete(arguments: dict[str, Any], store: MemoryStore) -> str:
    """Delete ``key``; a missing key is an error (nothing changes)."""
    _arguments("memory_delete", arguments, ("key",))
    key = check_key("memory_delete", arguments.get("key"), store.limits)
    change = store.delete(key)
    if change is None:
        raise MemoryStoreError(f"memory_delete: no entry named {quote(key)}; nothing was deleted")
    return f"deleted {quote(key)}. {_usage(store, change.entries)}"


def memory_list(arguments: dict[str, Any], store: MemoryStore) -> str:
    """JSON text: the keys (optionally under a prefix) with their sizes and previews."""
    _arguments("memory_list", arguments, ("prefix",))
    prefix = check_prefix("memory_list", arguments.get("prefix"), store.limits)
    entries = store.entries()
    listed = [
        {
            "key": key,
            "chars": len(value),
            "preview": value if len(value) <= PREVIEW_CHARS else value[:PREVIEW_CHARS] + "…",
        }
        for key, value in sorted(entries.items())
        if key.startswith(prefix)
    ]
    answer = {
        "prefix": prefix,
        "count": len(listed),
        "entries": listed,
        "total_entries": len(entries),
        "total_bytes": total_bytes(entries),
        "limits": {"max_entries": store.limits.max_entries, "max_total_bytes": store.limits.max_total_bytes},
    }
    return orjson.dumps(answer).decode()
