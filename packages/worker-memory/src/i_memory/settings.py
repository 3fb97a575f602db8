"""``memory.json`` in config_dir: the validated module settings (not the per-workspace state file)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from i_protocol.errors import SettingsError
from i_protocol.settings import optional_bool, optional_int, reject_unknown

from .errors import MemoryStoreError

# Hard ceilings: a config may raise the defaults only up to these.
HARD_MAX_ENTRIES = 10_000
HARD_MAX_KEY_CHARS = 1024
HARD_MAX_VALUE_CHARS = 1_000_000
HARD_MAX_TOTAL_BYTES = 4 * 1024 * 1024

_BOUNDS = {
    "max_entries": HARD_MAX_ENTRIES,
    "max_key_chars": HARD_MAX_KEY_CHARS,
    "max_value_chars": HARD_MAX_VALUE_CHARS,
    "max_total_bytes": HARD_MAX_TOTAL_BYTES,
}
_FIELDS = ("enabled", "inject", *_BOUNDS)


@dataclass(frozen=True)
class Limits:
    """Bounds on what the memory file may hold; sizes are counted as stated in each name."""

    max_entries: int = 256
    max_key_chars: int = 128
    max_value_chars: int = 8000
    max_total_bytes: int = 64 * 1024


@dataclass(frozen=True)
class MemorySettings:
    """What the module config asks for; every field already checked."""

    enabled: bool = True
    inject: bool = True
    limits: Limits = Limits()


def parse_settings(data: dict[str, Any], source: str = "memory.json") -> MemorySettings:
    """Validate a module config object; any bad field is a ``MemoryStoreError`` naming it."""
    try:
        reject_unknown(data, _FIELDS, file=source)
        enabled = optional_bool(data, "enabled", True, file=source)
        inject = optional_bool(data, "inject", True, file=source)
        defaults = Limits()
        bounds = {
            name: optional_int(data, name, getattr(defaults, name), file=source, minimum=1, maximum=ceiling)
            for name, ceiling in _BOUNDS.items()
        }
        return MemorySettings(enabled=enabled, inject=inject, limits=Limits(**bounds))
    except SettingsError as exc:
        raise MemoryStoreError(str(exc)) from exc
