"""``checkpoint.json`` in config_dir: the bounds of what one snapshot and one session's store may hold."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from i_protocol.errors import SettingsError
from i_protocol.settings import optional_int, reject_unknown

from .errors import CheckpointError

MIB = 1024 * 1024


@dataclass(frozen=True)
class Settings:
    """Bounds, each already checked. A shell call whose work tree is over ``max_files`` or
    ``max_mib`` is not snapshotted (its turn is said not undoable before it runs); a session whose
    store would grow over ``max_store_mib`` stops recording; stores untouched for ``keep_days`` go."""

    max_files: int = 50_000
    max_mib: int = 512
    max_store_mib: int = 1024
    keep_days: int = 14
    max_seconds: int = 8
    """How long one snapshot may read files (the host's deadline per call is 15 s)."""

    @property
    def max_bytes(self) -> int:
        """``max_mib`` in bytes."""
        return self.max_mib * MIB

    @property
    def max_store_bytes(self) -> int:
        """``max_store_mib`` in bytes."""
        return self.max_store_mib * MIB


_CEILINGS = {
    "max_files": 1_000_000,
    "max_mib": 64 * 1024,
    "max_store_mib": 256 * 1024,
    "keep_days": 3650,
    "max_seconds": 12,
}


def parse_settings(data: dict[str, Any], source: str = "checkpoint.json") -> Settings:
    """Validate the module config; a bad field is a ``CheckpointError`` naming it."""
    try:
        reject_unknown(data, tuple(_CEILINGS), file=source)
        defaults = Settings()
        values = {
            name: optional_int(
                data, name, getattr(defaults, name), file=source, minimum=int(name != "max_seconds"), maximum=ceiling
            )
            for name, ceiling in _CEILINGS.items()
        }
    except SettingsError as exc:
        raise CheckpointError(str(exc)) from exc
    return Settings(**values)
