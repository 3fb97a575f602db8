"""plugins.json and bindings.json: which modules run, and which program runs each one.

- ``plugins.json`` (portable): ``{"profile":"standard","disabled":["web"]}``.
- ``bindings.json`` (host-specific): ``{"compact":{"exec":["/abs/my-compactor"],"cwd":"/abs/dir"}}``
  replaces the program of every entry of a module; schemas and events stay.

Never a silent fallback: an unknown module or an invalid binding is an error naming the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from i_protocol.errors import SettingsError
from i_protocol.settings import optional_str, optional_str_list, reject_unknown, require_argv

from .errors import ConfigError
from .jsonfile import read_optional_json_object
from .modules import CONSOLE_MODULES, MODULES, PROFILES

DEFAULT_PLUGINS: dict[str, Any] = {"profile": "standard", "disabled": []}


def _known_modules() -> str:
    return ", ".join(sorted(MODULES))


def load_plugins(config_dir: Path) -> dict[str, Any]:
    """plugins.json validated: a known profile and a list of known module names to disable."""
    path = config_dir / "plugins.json"
    raw = read_optional_json_object(path, what="plugins.json")
    if raw is None:
        return dict(DEFAULT_PLUGINS)
    try:
        reject_unknown(raw, ("profile", "disabled"), file=str(path))
        profile = optional_str(raw, "profile", "standard", file=str(path))
        disabled = optional_str_list(raw, "disabled", [], file=str(path))
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc
    if profile not in PROFILES:
        raise ConfigError(f"{path}: unknown profile {profile!r}; known profiles: {', '.join(PROFILES)}")
    for name in disabled:
        if name not in MODULES:
            raise ConfigError(f"{path}: disabled module {name!r} is unknown; known modules: {_known_modules()}")
    return {"profile": profile, "disabled": disabled}


def load_bindings(config_dir: Path) -> dict[str, dict[str, Any]]:
    """bindings.json validated: known modules, absolute executable, absolute existing cwd."""
    path = config_dir / "bindings.json"
    raw = read_optional_json_object(path, what="bindings.json")
    if raw is None:
        return {}
    bindings: dict[str, dict[str, Any]] = {}
    for module, binding in raw.items():
        where = f"{path}: module {module!r}"
        if module not in MODULES and module != "provider":
            raise ConfigError(f"{path}: module {module!r} is unknown; known modules: {_known_modules()}")
        if not isinstance(binding, dict):
            raise ConfigError(f"{where}: binding must be an object with exec and optional cwd")
        try:
            reject_unknown(binding, ("exec", "cwd"), file=str(path), at=module)
            argv = require_argv(binding, "exec", file=str(path), at=module)
            cwd = optional_str(binding, "cwd", None, file=str(path), at=module)
        except SettingsError as exc:
            raise ConfigError(str(exc)) from exc
        if not os.path.isabs(argv[0]):
            raise ConfigError(f"{where}: exec[0] must be an absolute path, got {argv[0]!r}")
        if not os.path.isfile(argv[0]) or not os.access(argv[0], os.X_OK):
            raise ConfigError(f"{where}: exec[0] {argv[0]!r} is not an executable file")
        if cwd is not None:
            if not os.path.isabs(cwd):
                raise ConfigError(f"{where}: cwd must be an absolute path, got {cwd!r}")
            if not os.path.isdir(cwd):
                raise ConfigError(f"{where}: cwd {cwd!r} does not exist")
        bindings[module] = {"exec": list(argv), **({"cwd": cwd} if cwd is not None else {})}
    return bindings


def selected_modules(config_dir: Path) -> set[str]:
    """The modules plugins.json selects (its profile minus ``disabled``) plus the console's own."""
    plugins = load_plugins(config_dir)
    only_with = {m: MODULES[m].only_with for m in PROFILES[plugins["profile"]]}
    return {
        m
        for m, needed in only_with.items()
        if m not in plugins["disabled"] and (needed is None or (config_dir / needed).is_file())
    } | set(CONSOLE_MODULES)
