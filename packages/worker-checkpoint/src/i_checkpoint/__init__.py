"""Per-turn file checkpoints and undo for the i agent runtime: before_tool, after_tool and undo."""

from .__about__ import __version__

__all__ = ["__version__"]
