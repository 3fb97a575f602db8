"""Reading the core's small JSON files with errors that name the file and the problem."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from .errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024


def read_json_object(path: Path, *, what: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is a ConfigError naming the file."""
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise ConfigError(f"{path}: {what} is larger than {limit} bytes")
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"{path}: {what} is not valid JSON: {exc}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{path}: {what} must be a JSON object, got {type(value).__name__}")
    return value


def read_optional_json_object(path: Path, *, what: str) -> dict[str, Any] | None:
    """Like read_json_object, but a missing file gives None."""
    if not path.exists():
        return None
    return read_json_object(path, what=what)
