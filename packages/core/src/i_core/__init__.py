"""i-core: the `i` agent runtime (console, model protocols, tools, sessions, worker host)."""

from .__about__ import __version__

__all__ = ["__version__"]
