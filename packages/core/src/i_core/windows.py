"""The catalog of well-known models' context windows (``model_windows.json``: data with its source
and date), used by ``i --runtime init`` only, when the server reports no running window.

The one exception to "the core holds no capacity table" (SPEC §3.1): at run time the window comes
from config.json alone. A name matches a catalog entry exactly (case aside, a ``vendor/`` prefix
dropped), or as the entry followed by ``-`` and a suffix (a dated snapshot: ``gpt-4o-2024-08-06``),
the longest such entry winning.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

CATALOG = Path(__file__).with_name("model_windows.json")


@dataclass(frozen=True)
class CatalogWindow:
    """A catalog entry that matched: its window, the entry's name, and where the data came from."""

    window: int
    entry: str
    source: str
    date: str

    def describe(self) -> str:
        """Where the value comes from, for init's note."""
        return f"the catalog of well-known models ({CATALOG.name}: {self.entry}, {self.source}, as of {self.date})"


def catalog_window(model: str, path: Path = CATALOG) -> CatalogWindow | None:
    """The catalog's window for ``model``, or None when the catalog does not know it."""
    data = orjson.loads(path.read_bytes())
    models = {str(name).lower(): value for name, value in data["models"].items()}
    name = model.strip().lower().rsplit("/", 1)[-1]
    entry = name if name in models else None
    if entry is None:
        prefixes = [key for key in models if name.startswith(key + "-")]
        entry = max(prefixes, key=len) if prefixes else None
    if entry is None:
        return None
    return CatalogWindow(int(models[entry]), entry, str(data["source"]), str(data["date"]))
