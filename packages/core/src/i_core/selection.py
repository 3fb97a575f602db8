"""From plugins.json, bindings.json and builtin.json to a manifest.

- ``plugins.json`` (portable): ``{"profile":"standard","disabled":["web"]}``.
- ``bindings.json`` (host-specific): ``{"compact":{"exec":["/abs/my-compactor"],"cwd":"/abs/dir"}}``
  replaces the program of every entry of a module; schemas and events stay.
- ``builtin.json``: ``{"builtin_profile":"configured","tools":[]}`` resolves the manifest afresh
  at every start from the two files above (plus any hand-written entries it carries).

Never a silent fallback: an unknown module, an invalid binding or a missing worker is an error.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .jsonfile import read_json_object, read_optional_json_object
from .manifest import Manifest, parse_manifest
from .modules import MODULES, PROFILES

DEFAULT_PLUGINS: dict[str, Any] = {"profile": "standard", "disabled": []}


def _known_modules() -> str:
    return ", ".join(sorted(MODULES))


def load_plugins(config_dir: Path) -> dict[str, Any]:
    """plugins.json validated: a known profile and a list of known module names to disable."""
    path = config_dir / "plugins.json"
    raw = read_optional_json_object(path, what="plugins.json")
    if raw is None:
        return dict(DEFAULT_PLUGINS)
    unknown = sorted(set(raw) - {"profile", "disabled"})
    if unknown:
        raise ConfigError(f"{path}: unknown field(s): {', '.join(unknown)}")
    profile = raw.get("profile", "standard")
    if profile not in PROFILES:
        raise ConfigError(f"{path}: unknown profile {profile!r}; known profiles: {', '.join(PROFILES)}")
    disabled = raw.get("disabled", [])
    if not isinstance(disabled, list) or not all(isinstance(name, str) for name in disabled):
        raise ConfigError(f"{path}: disabled must be an array of module names")
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
        extra = sorted(set(binding) - {"exec", "cwd"})
        if extra:
            raise ConfigError(f"{where}: unknown binding field(s): {', '.join(extra)}")
        argv = binding.get("exec")
        if isinstance(argv, str):
            raise ConfigError(f"{where}: exec must be an argv array, not a shell string")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ConfigError(f"{where}: exec must be a non-empty array of strings")
        if not os.path.isabs(argv[0]):
            raise ConfigError(f"{where}: exec[0] must be an absolute path, got {argv[0]!r}")
        if not os.path.isfile(argv[0]) or not os.access(argv[0], os.X_OK):
            raise ConfigError(f"{where}: exec[0] {argv[0]!r} is not an executable file")
        cwd = binding.get("cwd")
        if cwd is not None:
            if not isinstance(cwd, str) or not os.path.isabs(cwd):
                raise ConfigError(f"{where}: cwd must be an absolute path, got {cwd!r}")
            if not os.path.isdir(cwd):
                raise ConfigError(f"{where}: cwd {cwd!r} does not exist")
        bindings[module] = {"exec": list(argv), **({"cwd": cwd} if cwd is not None else {})}
    return bindings


def core_worker_argv(name: str) -> list[str]:
    """argv of a module bundled in the core: ``i --runtime worker NAME`` by absolute path."""
    return [sys.executable, "-m", "i_core", "--runtime", "worker", name]


def find_script(script: str) -> str | None:
    """A worker's console script: next to the running interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / script
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(script)
    return os.path.abspath(found) if found else None


def module_exec(module: str, bindings: dict[str, dict[str, Any]], config_dir: Path) -> dict[str, Any]:
    """The exec/cwd of a module's entries: its binding, else its official implementation."""
    if module in bindings:
        return dict(bindings[module])
    spec = MODULES[module]
    if not spec.available:
        raise ConfigError(
            f"module {module!r} is not available in this version of i-core; "
            f'disable it in {config_dir / "plugins.json"} ("disabled": ["{module}"]), '
            f"pick another profile, or bind a replacement in bindings.json"
        )
    if spec.bundled:
        return {"exec": core_worker_argv(module), "cwd": str(config_dir)}
    assert spec.script is not None and spec.package is not None
    found = find_script(spec.script)
    if found is None:
        raise ConfigError(
            f"module {module!r} needs the {spec.script!r} command, which is not installed: "
            f"run `pipx install {spec.package}` (or `pip install {spec.package}` in this environment), "
            f'or disable the module in {config_dir / "plugins.json"} with "disabled": ["{module}"]'
        )
    return {"exec": [found], "cwd": str(config_dir)}


def generate_manifest(
    profile: str, config_dir: Path, *, disabled: list[str] | None = None, bindings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest object of a profile with bindings applied, every path absolute."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; known profiles: {', '.join(PROFILES)}")
    bindings = load_bindings(config_dir) if bindings is None else bindings
    skip = set(disabled or ())
    tools: list[dict[str, Any]] = []
    hooks: list[dict[str, Any]] = []
    for module in PROFILES[profile]:
        if module in skip:
            continue
        spec = MODULES[module]
        where = module_exec(module, bindings, config_dir)
        if spec.events:
            hooks.append({"events": list(spec.events), **where, "module": module})
        for tool in spec.tools:
            tools.append({**tool, **where, "module": module})
    manifest: dict[str, Any] = {"tools": tools, "hooks": hooks}
    if "provider" in bindings:
        manifest["provider"] = dict(bindings["provider"])
    return manifest


def with_steering(manifest: Manifest, config_dir: Path, queue: Path) -> Manifest:
    """``manifest`` plus the console's steering hook (its binding, else the bundled worker) with
    ``--queue QUEUE`` appended to its argv; it runs after every other hook of its events."""
    from .manifest import with_hook

    where = module_exec("steering", load_bindings(config_dir), config_dir)
    entry = {
        "events": list(MODULES["steering"].events),
        **where,
        "exec": [*where["exec"], "--queue", str(queue)],
        "module": "steering",
    }
    return with_hook(manifest, entry, config_dir)


def load_active_manifest(config_dir: Path, explicit: Path | None = None) -> Manifest:
    """The manifest a session uses: ``--manifest FILE`` as written, else builtin.json resolved now.

    A hand-written manifest is authoritative and never rewritten. Without builtin.json the
    core runs with its built-in tools only.
    """
    if explicit is not None:
        path = explicit.expanduser().resolve()
        raw = read_json_object(path, what="manifest")
        if "builtin_profile" in raw:
            return _resolve_builtin(raw, path, config_dir)
        return parse_manifest(raw, path.parent, str(path))
    path = config_dir / "builtin.json"
    raw_builtin = read_optional_json_object(path, what="builtin.json")
    if raw_builtin is None:
        return Manifest(tools=(), hooks=(), provider=None, source="(no manifest: built-in tools only)")
    return _resolve_builtin(raw_builtin, path, config_dir)


def _resolve_builtin(raw: dict[str, Any], path: Path, config_dir: Path) -> Manifest:
    selector = raw.get("builtin_profile")
    if selector == "configured":
        plugins = load_plugins(config_dir)
        generated = generate_manifest(plugins["profile"], config_dir, disabled=plugins["disabled"])
    elif isinstance(selector, str) and selector in PROFILES:
        generated = generate_manifest(selector, config_dir)
    else:
        raise ConfigError(
            f'{path}: builtin_profile must be "configured" or a profile name ({", ".join(PROFILES)}), got {selector!r}'
        )
    extra_tools = raw.get("tools", [])
    extra_hooks = raw.get("hooks", [])
    if not isinstance(extra_tools, list) or not isinstance(extra_hooks, list):
        raise ConfigError(f"{path}: tools and hooks must be arrays")
    merged = {"tools": [*generated["tools"], *extra_tools], "hooks": [*generated["hooks"], *extra_hooks]}
    if "provider" in raw:
        merged["provider"] = raw["provider"]
    elif "provider" in generated:
        merged["provider"] = generated["provider"]
    return parse_manifest(merged, path.parent, str(path))
