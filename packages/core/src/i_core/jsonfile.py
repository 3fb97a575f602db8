"""The core's small files: reading JSON objects with errors that name the file and the problem.

(Atomic writes, their temporaries and the cleanup of a killed write's debris: ``i_protocol.atomic``.)
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from i_protocol import ConfigError as ProtocolConfigError
from i_protocol.config import read_json_object as _read

from .errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024


def read_json_object(path: Path, *, what: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is a (core) ConfigError naming the file."""
    try:
        return _read(str(path), what=what, limit=limit)
    except ProtocolConfigError as exc:
        raise ConfigError(str(exc)) from None


def read_optional_json_object(path: Path, *, what: str) -> dict[str, Any] | None:
    """Like read_json_object, but a missing file gives None."""
    if not path.exists():
        return None
    return read_json_object(path, what=what)
