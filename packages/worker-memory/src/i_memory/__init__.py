"""Workspace memory worker for the i agent runtime: memory tools and before_turn context."""

from .__about__ import __version__
from .errors import MemoryStoreError
from .schemas import TOOLS
from .settings import Limits, MemorySettings, parse_settings
from .store import MemoryStore

__all__ = ["TOOLS", "Limits", "MemorySettings", "MemoryStore", "MemoryStoreError", "__version__", "parse_settings"]
