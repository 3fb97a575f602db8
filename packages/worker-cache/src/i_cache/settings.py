"""``cache.json``: the validated settings of the cache module."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import CacheError

MODES = ("observe", "openai", "anthropic")
RETENTIONS = ("in_memory", "24h")
TTLS = ("5m", "1h")
DEFAULT_STATS = "metrics/cache-stats.json"
DEFAULT_NAMESPACE = "default"
DEFAULT_TARGET = 0.99
MAX_NAMESPACE_CHARS = 256
_FIELDS = ("enabled", "mode", "namespace", "stats", "target_hit_ratio", "retention", "ttl")


@dataclass(frozen=True)
class CacheSettings:
    """What ``cache.json`` asks for; every field already checked."""

    enabled: bool = True
    mode: str = "observe"
    namespace: str = DEFAULT_NAMESPACE
    stats: str = DEFAULT_STATS
    target_hit_ratio: float = DEFAULT_TARGET
    retention: str | None = None
    ttl: str | None = None


def parse_settings(data: dict[str, Any], source: str = "cache.json") -> CacheSettings:
    """Validate a ``cache.json`` object; any bad field is a ``CacheError`` naming it."""
    unknown = sorted(set(data) - set(_FIELDS))
    if unknown:
        raise CacheError(f"{source}: unknown field(s) {', '.join(unknown)}; known fields: {', '.join(_FIELDS)}")
    enabled = data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise CacheError(f"{source}: 'enabled' must be true or false, got {enabled!r}")
    mode = data.get("mode", "observe")
    if mode not in MODES:
        raise CacheError(f"{source}: 'mode' must be one of {', '.join(MODES)}, got {mode!r}")
    namespace = data.get("namespace", DEFAULT_NAMESPACE)
    if not isinstance(namespace, str) or not namespace or len(namespace) > MAX_NAMESPACE_CHARS:
        raise CacheError(f"{source}: 'namespace' must be a string of 1..{MAX_NAMESPACE_CHARS} characters")
    stats = check_stats_path(data.get("stats", DEFAULT_STATS), source)
    target = data.get("target_hit_ratio", DEFAULT_TARGET)
    if isinstance(target, bool) or not isinstance(target, int | float) or not math.isfinite(target):
        raise CacheError(f"{source}: 'target_hit_ratio' must be a number between 0 and 1, got {target!r}")
    if not 0 <= target <= 1:
        raise CacheError(f"{source}: 'target_hit_ratio' must be between 0 and 1, got {target!r}")
    retention = data.get("retention")
    if retention is not None:
        if retention not in RETENTIONS:
            raise CacheError(f"{source}: 'retention' must be one of {', '.join(RETENTIONS)}, got {retention!r}")
        if mode != "openai":
            raise CacheError(f"{source}: 'retention' applies to mode 'openai' only (mode is {mode!r})")
    ttl = data.get("ttl")
    if ttl is not None:
        if ttl not in TTLS:
            raise CacheError(f"{source}: 'ttl' must be one of {', '.join(TTLS)}, got {ttl!r}")
        if mode != "anthropic":
            raise CacheError(f"{source}: 'ttl' applies to mode 'anthropic' only (mode is {mode!r})")
    return CacheSettings(
        enabled=enabled,
        mode=mode,
        namespace=namespace,
        stats=stats,
        target_hit_ratio=float(target),
        retention=retention,
        ttl=ttl,
    )


def check_stats_path(value: object, source: str = "cache.json") -> str:
    """A stats path relative to the workspace state root: no absolute path, no ``..``."""
    if not isinstance(value, str) or not value.strip():
        raise CacheError(f"{source}: 'stats' must be a non-empty relative path, got {value!r}")
    if "\x00" in value:
        raise CacheError(f"{source}: 'stats' contains a NUL byte")
    normalised = value.replace("\\", "/")
    # A Windows drive ("C:") or a leading slash would escape the state root just like "..".
    if normalised.startswith("/") or (len(normalised) > 1 and normalised[1] == ":") or normalised.startswith("~"):
        raise CacheError(f"{source}: 'stats' must be relative to the workspace state folder, got {value!r}")
    parts = [part for part in normalised.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise CacheError(f"{source}: 'stats' must not contain '..', got {value!r}")
    if not parts:
        raise CacheError(f"{source}: 'stats' must name a file, got {value!r}")
    return "/".join(parts)
