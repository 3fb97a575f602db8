"""Request context: the workspace, its id and the four directories a worker may use."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from .errors import ContextError

if TYPE_CHECKING:
    from collections.abc import Mapping

APP_NAME = "i"
PATH_KEYS = ("config_dir", "data_dir", "cache_dir", "runtime_dir")
ENV_KEYS = {
    "config_dir": "I_CONFIG_DIR",
    "data_dir": "I_DATA_DIR",
    "cache_dir": "I_CACHE_DIR",
    "runtime_dir": "I_RUNTIME_DIR",
}


class Paths:
    """The four platform directories, all absolute and validated."""

    __slots__ = PATH_KEYS

    def __init__(self, config_dir: str, data_dir: str, cache_dir: str, runtime_dir: str) -> None:
        self.config_dir = config_dir
        self.data_dir = data_dir
        self.cache_dir = cache_dir
        self.runtime_dir = runtime_dir

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Paths) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().values()))

    def __repr__(self) -> str:
        return f"Paths({self.as_dict()!r})"

    def as_dict(self) -> dict[str, str]:
        """The JSON shape used in a request's top-level ``paths``."""
        return {key: getattr(self, key) for key in PATH_KEYS}

    def as_env(self) -> dict[str, str]:
        """The ``I_*_DIR`` environment variables that carry these paths to a child."""
        return {ENV_KEYS[key]: getattr(self, key) for key in PATH_KEYS}


def _default_dir(key: str) -> str:
    # platformdirs is imported only when no explicit directory is given: it costs start-up time.
    import warnings

    import platformdirs

    getter = {
        "config_dir": platformdirs.user_config_dir,
        "data_dir": platformdirs.user_data_dir,
        "cache_dir": platformdirs.user_cache_dir,
        "runtime_dir": platformdirs.user_runtime_dir,
    }[key]
    with warnings.catch_warnings():
        # Without XDG_RUNTIME_DIR platformdirs warns and falls back to a temp folder: the fallback
        # is the documented default here, and a warning on every start would only be noise.
        warnings.simplefilter("ignore")
        return str(getter(APP_NAME, appauthor=False))


def _check_dir(key: str, value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ContextError(f"paths.{key} must be a non-empty string")
    if "\x00" in value:
        raise ContextError(f"paths.{key} contains a NUL byte")
    if not os.path.isabs(value):
        raise ContextError(f"paths.{key} must be absolute, got {value!r}")
    if ".." in value.replace("\\", "/").split("/"):
        raise ContextError(f"paths.{key} must not contain '..', got {value!r}")
    return value


def _is_within(child: str, parent: str) -> bool:
    try:
        common = os.path.commonpath([child, parent])
    except ValueError:  # different drives on Windows
        return False
    return common == parent


def validate_paths(paths: Paths) -> Paths:
    """Check the SPEC rules: absolute, no ``..``, config/data never under cache/runtime.

    The containment check is made both on the paths as given and on their resolved
    aliases (symlinks), so a link cannot hide that data lives under the cache.
    """
    for key in PATH_KEYS:
        _check_dir(key, getattr(paths, key))
    for inner in ("config_dir", "data_dir"):
        for outer in ("cache_dir", "runtime_dir"):
            a, b = getattr(paths, inner), getattr(paths, outer)
            pairs = ((os.path.normpath(a), os.path.normpath(b)), (os.path.realpath(a), os.path.realpath(b)))
            if any(_is_within(x, y) for x, y in pairs):
                raise ContextError(f"paths.{inner} ({a}) must not lie under paths.{outer} ({b})")
    return paths


def paths_from_request(value: object) -> Paths:
    """Validate an explicit top-level ``paths`` object of a request."""
    if not isinstance(value, dict):
        raise ContextError("paths must be an object with config_dir, data_dir, cache_dir, runtime_dir")
    unknown = sorted(set(value) - set(PATH_KEYS))
    if unknown:
        raise ContextError(f"paths has unknown field(s): {', '.join(unknown)}")
    missing = [key for key in PATH_KEYS if key not in value]
    if missing:
        raise ContextError(f"paths is missing: {', '.join(missing)}")
    return validate_paths(Paths(**{key: _check_dir(key, value[key]) for key in PATH_KEYS}))


def paths_from_env(environ: Mapping[str, str] | None = None) -> Paths:
    """Directories from ``I_*_DIR``, each falling back to the platformdirs default for ``i``."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for key in PATH_KEYS:
        raw = env.get(ENV_KEYS[key])
        if raw:
            if not os.path.isabs(raw):
                raise ContextError(f"{ENV_KEYS[key]} must be an absolute path, got {raw!r}")
            found[key] = raw
        else:
            found[key] = _default_dir(key)
    return validate_paths(Paths(**found))


def parse_workspace_id(value: object) -> str:
    """Validate an explicit ``workspace_id`` and return it in canonical UUID form."""
    if not isinstance(value, str):
        raise ContextError("workspace_id must be a UUID string")
    import uuid

    try:
        return str(uuid.UUID(value))
    except ValueError:
        raise ContextError(f"workspace_id must be a UUID, got {value!r}") from None


class RequestContext:
    """The validated top-level context of one request."""

    __slots__ = ("explicit_paths", "workspace", "workspace_id")

    def __init__(self, workspace: str | None, workspace_id: str | None, explicit_paths: Paths | None) -> None:
        self.workspace = workspace
        self.workspace_id = workspace_id
        self.explicit_paths = explicit_paths


def parse_context(frame: Mapping[str, Any]) -> RequestContext:
    """Validate ``workspace``, ``workspace_id`` and ``paths`` of a request frame."""
    workspace = frame.get("workspace")
    if workspace is not None and (not isinstance(workspace, str) or not workspace):
        raise ContextError("workspace must be a non-empty string path")
    if isinstance(workspace, str) and "\x00" in workspace:
        raise ContextError("workspace contains a NUL byte")
    raw_id = frame.get("workspace_id")
    workspace_id = None if raw_id is None else parse_workspace_id(raw_id)
    raw_paths = frame.get("paths")
    paths = None if raw_paths is None else paths_from_request(raw_paths)
    return RequestContext(workspace=workspace, workspace_id=workspace_id, explicit_paths=paths)
