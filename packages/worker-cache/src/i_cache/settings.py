"""``cache.json``: the validated settings of the cache module."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from i_protocol.errors import SettingsError
from i_protocol.settings import optional_bool, optional_choice, optional_number, optional_str, reject_unknown

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


SMOKE_STATS = "metrics/smoke-cache.json"
SMOKE_SETTINGS = CacheSettings(mode="observe", stats=SMOKE_STATS)
"""What ``i-cache smoke`` uses whatever cache.json says (the smoke profiles, seed 001 §10): observe
only, so a connectivity check adds no provider cache field, and statistics kept apart from the
workload's own."""


def parse_settings(data: dict[str, Any], source: str = "cache.json") -> CacheSettings:
    """Validate a ``cache.json`` object; any bad field is a ``CacheError`` naming it."""
    try:
        return _parse(data, source)
    except SettingsError as exc:
        raise CacheError(str(exc)) from exc


def _parse(data: dict[str, Any], source: str) -> CacheSettings:
    reject_unknown(data, _FIELDS, file=source)
    mode = optional_choice(data, "mode", MODES, "observe", file=source)
    retention = optional_choice(data, "retention", RETENTIONS, None, file=source)
    if retention is not None and mode != "openai":
        raise CacheError(f"{source}: retention applies to mode 'openai' only (mode is {mode!r})")
    ttl = optional_choice(data, "ttl", TTLS, None, file=source)
    if ttl is not None and mode != "anthropic":
        raise CacheError(f"{source}: ttl applies to mode 'anthropic' only (mode is {mode!r})")
    return CacheSettings(
        enabled=optional_bool(data, "enabled", True, file=source),
        mode=mode,
        namespace=optional_str(data, "namespace", DEFAULT_NAMESPACE, file=source, max_chars=MAX_NAMESPACE_CHARS),
        stats=check_stats_path(data.get("stats", DEFAULT_STATS), source),
        target_hit_ratio=optional_number(data, "target_hit_ratio", DEFAULT_TARGET, file=source, minimum=0, maximum=1),
        retention=retention,
        ttl=ttl,
    )


def check_stats_path(value: object, source: str = "cache.json") -> str:
    """A stats path relative to the workspace state root: no absolute path, no ``..``."""
    if not isinstance(value, str) or not value.strip():
        raise CacheError(f"{source}: stats must be a non-empty relative path, got {value!r}")
    if "\x00" in value:
        raise CacheError(f"{source}: stats contains a NUL byte")
    normalised = value.replace("\\", "/")
    # A Windows drive ("C:") or a leading slash would escape the state root just like "..".
    if normalised.startswith("/") or (len(normalised) > 1 and normalised[1] == ":") or normalised.startswith("~"):
        raise CacheError(f"{source}: stats must be relative to the workspace state folder, got {value!r}")
    parts = [part for part in normalised.split("/") if part not in ("", ".")]
    if ".." in parts:
        raise CacheError(f"{source}: stats must not contain '..', got {value!r}")
    if not parts:
        raise CacheError(f"{source}: stats must name a file, got {value!r}")
    return "/".join(parts)
