"""Config discovery for official workers: ``--config FILE``, else ``config_dir/<module>.json``."""

from __future__ import annotations

import os
from typing import Any

from .errors import ConfigError, FileError
from .files import read_json

MAX_CONFIG_BYTES = 1024 * 1024


class WorkerConfig:
    """A loaded module configuration: its JSON object and the file it came from."""

    __slots__ = ("data", "path")

    def __init__(self, path: str | None, data: dict[str, Any]) -> None:
        self.path = path
        self.data = data

    @property
    def base_dir(self) -> str | None:
        """The folder that relative file paths inside this config resolve against."""
        return None if self.path is None else os.path.dirname(self.path)

    def resolve(self, value: str, *, default_base: str | None = None) -> str:
        """Resolve a file path written in this config against the config file's folder."""
        candidate = os.path.expanduser(value)
        base = self.base_dir or default_base
        if os.path.isabs(candidate) or base is None:
            return candidate
        return os.path.join(base, candidate)

    def __repr__(self) -> str:
        return f"WorkerConfig(path={self.path!r}, data={self.data!r})"


def discover_config_path(module: str, config_dir: str, explicit: str | None = None) -> tuple[str, bool]:
    """The config file for ``module`` and whether it was given explicitly.

    An explicit ``--config`` path resolves against the worker's cwd and must exist; the
    discovered ``config_dir/<module>.json`` is optional.
    """
    if explicit is not None:
        return os.path.abspath(explicit), True
    return os.path.join(config_dir, f"{module}.json"), False


def read_json_object(path: str, *, what: str = "config", limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Read a JSON object of at most ``limit`` bytes; every failure is a ConfigError naming the file."""
    try:
        data = read_json(path, limit, what=what, lossless=True)
    except FileNotFoundError:
        raise ConfigError(f"{path}: {what} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read {what}: {exc.strerror or exc}") from None
    except FileError as exc:
        raise ConfigError(str(exc)) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: {what} must be a JSON object, got {type(data).__name__}")
    return data


def load_config_file(path: str, *, required: bool) -> WorkerConfig:
    """Read a JSON-object config file; a missing optional file gives an empty config."""
    if not required and not os.path.exists(path):
        return WorkerConfig(path=None, data={})
    return WorkerConfig(path=path, data=read_json_object(path))


class ConfigCache:
    """Loads a config file once and again only when its size or mtime changes."""

    def __init__(self) -> None:
        self._entries: dict[str, tuple[tuple[int, int] | None, WorkerConfig]] = {}

    def load(self, path: str, *, required: bool) -> WorkerConfig:
        """The config at ``path``, re-read only when the file changed."""
        try:
            st = os.stat(path)
            stamp: tuple[int, int] | None = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        cached = self._entries.get(path)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        config = load_config_file(path, required=required)
        self._entries[path] = (stamp, config)
        return config
