"""Workspace memory worker for the i agent runtime: memory tools and before_turn context."""

from typing import TYPE_CHECKING

from .__about__ import __version__

if TYPE_CHECKING:
    from .errors import MemoryStoreError
    from .schemas import TOOLS
    from .settings import Limits, MemorySettings, parse_settings
    from .store import MemoryStore

# Imported on first use, so that the console script's i-protocol check (preflight) runs before
# anything that imports i_protocol.
_LAZY = {
    "Limits": "settings",
    "MemorySettings": "settings",
    "MemoryStore": "store",
    "MemoryStoreError": "errors",
    "TOOLS": "schemas",
    "parse_settings": "settings",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["TOOLS", "Limits", "MemorySettings", "MemoryStore", "MemoryStoreError", "__version__", "parse_settings"]
