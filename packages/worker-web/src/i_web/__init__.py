"""i-worker-web: web fetch and search for the i agent runtime, refusing non-public addresses."""

from typing import TYPE_CHECKING

from .__about__ import __version__

if TYPE_CHECKING:
    from .errors import WebError

# Imported on first use, so that the console script's i-protocol check (preflight) runs before
# anything that imports i_protocol.
_LAZY = {
    "WebError": "errors",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["WebError", "__version__"]
