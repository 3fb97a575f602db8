"""From plugins.json, bindings.json and builtin.json to the manifest a session runs.

``builtin.json`` (``{"builtin_profile":"configured","tools":[]}``) resolves the manifest afresh at
every start from plugins.json and bindings.json (``plugins.py``), with each module's program found
by ``executables.py``, plus any hand-written entries it carries. A hand-written ``--manifest`` is
authoritative and never rewritten.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import ConfigError
from .executables import bundle, module_exec
from .jsonfile import read_json_object, read_optional_json_object
from .manifest import Exec, Manifest, parse_manifest, with_hook
from .modules import MODULES, PROFILE_ARGS, PROFILES
from .plugins import load_bindings, load_plugins
from .providers import require_protocol_modules
from .settings import PROTOCOLS

if TYPE_CHECKING:
    from .settings import ApiConfig


def generate_manifest(
    profile: str, config_dir: Path, *, disabled: list[str] | None = None, bindings: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The manifest object of a profile with bindings applied, every path absolute."""
    if profile not in PROFILES:
        raise ConfigError(f"unknown profile {profile!r}; known profiles: {', '.join(PROFILES)}")
    bindings = load_bindings(config_dir) if bindings is None else bindings
    skip = set(disabled or ())
    tools: list[dict[str, Any]] = []
    ahead: list[dict[str, Any]] = []  # entries of events a module observes before every other hook
    hooks: list[dict[str, Any]] = []
    selected = [module for module in PROFILES[profile] if module not in skip and _runs_here(module, config_dir)]
    # The bundled modules that share one process (not those this profile gives arguments of their own).
    together = bundle(selected, bindings, alone=tuple(PROFILE_ARGS.get(profile, {})))
    for module in selected:
        spec = MODULES[module]
        where = module_exec(module, bindings, config_dir, together)
        extra = () if module in bindings else PROFILE_ARGS.get(profile, {}).get(module, ())
        if extra:
            where = {**where, "exec": [*where["exec"], *extra]}
        for group, events in zip((ahead, hooks), spec.hook_groups(), strict=True):
            if events:
                group.append({"events": list(events), **where, "module": module})
        for tool in spec.tools:
            tools.append({**tool, **where, "module": module})
    manifest: dict[str, Any] = {"tools": tools, "hooks": [*ahead, *hooks]}
    if "provider" in bindings:
        manifest["provider"] = dict(bindings["provider"])
    return manifest


def _runs_here(module: str, config_dir: Path) -> bool:
    """False for a module that needs a file of ``config_dir`` which is missing (mcp.json: no servers)."""
    needs = MODULES[module].only_with
    return needs is None or (config_dir / needs).is_file()


def with_steering(manifest: Manifest, config_dir: Path, queue: Path) -> Manifest:
    """``manifest`` plus the console's steering hook (its binding, else the bundled worker) with
    ``--queue QUEUE`` appended to its argv; it runs after every other hook of its events."""
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
    core runs with its built-in tools only, unless plugins.json exists: then the modules it selects
    would silently not run, so that is a ConfigError naming ``i --runtime init``.
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
        if (config_dir / "plugins.json").exists():
            raise ConfigError(
                f"{path} is missing, so the modules {config_dir / 'plugins.json'} selects would not run: "
                "`i --runtime init` writes it (it never overwrites a file); for the built-in tools only, "
                "remove plugins.json or pass --manifest"
            )
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


def bound_provider(config: ApiConfig, manifest: Manifest) -> Exec | None:
    """The provider worker a session's model requests go to: config.json's ``provider``, else the
    manifest's top-level ``provider`` (which already won over a bindings.json binding), else none."""
    return config.provider if config.provider is not None else manifest.provider


def check_protocol(config: ApiConfig, manifest: Manifest) -> None:
    """Refuse a protocol the core cannot speak with ``manifest``: called before any worker starts.

    With a provider bound any protocol is the provider's to interpret; without one it must be
    built in, and ``responses`` needs its wire module in the manifest.
    """
    if bound_provider(config, manifest) is not None:
        return
    if config.protocol not in PROTOCOLS:
        raise ConfigError(
            f"{config.source}: protocol {config.protocol!r} is not built in ({', '.join(PROTOCOLS)}); "
            "another protocol needs a provider worker: config.json provider, the manifest's provider "
            "or a bindings.json provider binding"
        )
    require_protocol_modules(config.protocol, manifest)
