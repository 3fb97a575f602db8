"""The desktop manifest: tools, hooks and provider entries, validated into typed objects.

Shape: ``{"tools":[{name, description, parameters, exec, cwd?}], "hooks":[{events, exec, cwd?}],
"provider"?: {exec, cwd?}}``. ``exec`` is an argv array (never a shell string); a bare program
name is looked up on PATH, a name with a path separator resolves against the final cwd; cwd
defaults to the manifest's folder and a relative cwd resolves against it.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from i_protocol.errors import SettingsError
from i_protocol.settings import require_argv

from .errors import ConfigError
from .events import BUILTIN_TOOLS, EVENTS

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a tool name may be (SPEC §3.1), for manifest tools and tools announced at run time."""
_TOP_LEVEL = {"tools", "hooks", "provider", "builtin_profile"}


@dataclass(frozen=True)
class Exec:
    """A resolved program: absolute argv[0] plus arguments, and a canonical existing cwd."""

    argv: tuple[str, ...]
    cwd: str
    env: tuple[str, ...] = ()
    """Environment variables passed to this worker beyond the allow-list: only ever the one a
    config.json ``provider`` names in its ``api_key_env`` (the documented credential exception)."""

    @property
    def key(self) -> tuple[tuple[str, ...], str]:
        """Pool key: one persistent worker per (argv, canonical cwd)."""
        return (self.argv, self.cwd)


@dataclass(frozen=True)
class ToolEntry:
    """An external tool: its model-facing schema and the worker that runs it."""

    name: str
    description: str
    parameters: dict[str, Any]
    exec: Exec
    module: str | None = None

    def schema(self) -> dict[str, Any]:
        """What the model sees: name, description and parameters only."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}


@dataclass(frozen=True)
class HookEntry:
    """A hook subscription: the events it receives, in manifest order, and its worker."""

    events: tuple[str, ...]
    exec: Exec
    module: str | None = None

    def handles(self, event: str) -> bool:
        """True when this hook is subscribed to ``event`` (``"*"`` matches all)."""
        return "*" in self.events or event in self.events


@dataclass(frozen=True)
class Manifest:
    """A validated manifest."""

    tools: tuple[ToolEntry, ...]
    hooks: tuple[HookEntry, ...]
    provider: Exec | None
    source: str

    def model_tools(self) -> list[dict[str, Any]]:
        """The external tools' schemas as the model sees them."""
        return [tool.schema() for tool in self.tools]

    def with_tools(self, tools: tuple[ToolEntry, ...]) -> Manifest:
        """This manifest with ``tools`` (announced at run time) after its own."""
        return Manifest(tools=(*self.tools, *tools), hooks=self.hooks, provider=self.provider, source=self.source)

    def tool(self, name: str) -> ToolEntry | None:
        """The external tool called ``name``, if any."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None

    def hooks_for(self, event: str) -> list[HookEntry]:
        """Hooks subscribed to ``event``, in manifest order."""
        return [hook for hook in self.hooks if hook.handles(event)]

    def execs(self) -> list[Exec]:
        """Every distinct worker program the manifest names, in first-use order."""
        seen: dict[tuple[tuple[str, ...], str], Exec] = {}
        entries: list[HookEntry | ToolEntry] = [*self.hooks, *self.tools]
        for entry in entries:
            seen.setdefault(entry.exec.key, entry.exec)
        if self.provider is not None:
            seen.setdefault(self.provider.key, self.provider)
        return list(seen.values())


def resolve_cwd(raw: object, base_dir: Path, where: str) -> str:
    """The final cwd of an entry: default ``base_dir``, relative against it, must exist."""
    if raw is None:
        candidate = base_dir
    elif isinstance(raw, str) and raw:
        candidate = Path(raw).expanduser()
        if not candidate.is_absolute():
            candidate = base_dir / candidate
    else:
        raise ConfigError(f"{where}.cwd must be a non-empty string path")
    try:
        resolved = candidate.resolve(strict=True)
    except (OSError, RuntimeError):
        raise ConfigError(f"{where}.cwd {str(candidate)!r} does not exist") from None
    if not resolved.is_dir():
        raise ConfigError(f"{where}.cwd {str(resolved)!r} is not a directory")
    return str(resolved)


def resolve_exec(argv: list[str], cwd: str, where: str, search_path: str | None = None) -> tuple[str, ...]:
    """Resolve argv[0] of a checked argv array to an absolute executable path."""
    program = argv[0]
    if not program:
        raise ConfigError(f"{where}.exec[0] is empty")
    if os.sep in program or (os.altsep and os.altsep in program):
        candidate = Path(program).expanduser()
        path = candidate if candidate.is_absolute() else Path(cwd) / candidate
        resolved = str(path)
        if not path.is_file() or not os.access(path, os.X_OK):
            raise ConfigError(f"{where}.exec[0] {resolved!r} is not an executable file")
    else:
        found = shutil.which(program, path=search_path if search_path is not None else os.environ.get("PATH"))
        if found is None:
            raise ConfigError(f"{where}.exec[0] {program!r} was not found on PATH")
        resolved = os.path.abspath(found)
    return (resolved, *argv[1:])


def parse_exec(entry: dict[str, Any], base_dir: Path, where: str) -> Exec:
    """The ``exec``/``cwd`` of one entry resolved: cwd against ``base_dir``, argv[0] to an absolute path."""
    cwd = resolve_cwd(entry.get("cwd"), base_dir, where)
    try:
        argv = require_argv(entry, "exec", file=None, at=where)  # ``where`` already names the file
    except SettingsError as exc:
        raise ConfigError(str(exc)) from exc
    return Exec(argv=resolve_exec(argv, cwd, where), cwd=cwd)


def _parse_tool(entry: object, base_dir: Path, where: str, seen: set[str]) -> ToolEntry:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object")
    name = entry.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise ConfigError(f"{where}.name must be 1-64 characters of A-Z a-z 0-9 _ -, got {name!r}")
    if name in BUILTIN_TOOLS:
        raise ConfigError(f"{where}: tool {name!r} would shadow the built-in tool of that name")
    if name in seen:
        raise ConfigError(f"{where}: tool {name!r} is declared twice")
    seen.add(name)
    description = entry.get("description", "")
    if not isinstance(description, str):
        raise ConfigError(f"{where}.description must be a string")
    parameters = entry.get("parameters")
    if not isinstance(parameters, dict) or parameters.get("type") != "object":
        raise ConfigError(f'{where}.parameters must be a JSON schema object with "type": "object"')
    module = entry.get("module")
    return ToolEntry(
        name, description, parameters, parse_exec(entry, base_dir, where), module if isinstance(module, str) else None
    )


def _parse_hook(entry: object, base_dir: Path, where: str) -> HookEntry:
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be an object")
    events = entry.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise ConfigError(f"{where}.events must be a non-empty array of event names")
    for event in events:
        if event != "*" and event not in EVENTS:
            raise ConfigError(f"{where}.events: unknown event {event!r}; known events: {', '.join(EVENTS)}, *")
    module = entry.get("module")
    return HookEntry(tuple(events), parse_exec(entry, base_dir, where), module if isinstance(module, str) else None)


def parse_manifest(raw: dict[str, Any], base_dir: Path, source: str) -> Manifest:
    """Validate a manifest object whose relative paths resolve against ``base_dir``."""
    unknown = sorted(set(raw) - _TOP_LEVEL)
    if unknown:
        raise ConfigError(f"{source}: unknown top-level field(s): {', '.join(unknown)}")
    tools_raw = raw.get("tools", [])
    hooks_raw = raw.get("hooks", [])
    if not isinstance(tools_raw, list):
        raise ConfigError(f"{source}: tools must be an array")
    if not isinstance(hooks_raw, list):
        raise ConfigError(f"{source}: hooks must be an array")
    seen: set[str] = set()
    tools = tuple(_parse_tool(t, base_dir, f"{source}: tools[{i}]", seen) for i, t in enumerate(tools_raw))
    hooks = tuple(_parse_hook(h, base_dir, f"{source}: hooks[{i}]") for i, h in enumerate(hooks_raw))
    provider_raw = raw.get("provider")
    provider = None
    if provider_raw is not None:
        if not isinstance(provider_raw, dict):
            raise ConfigError(f"{source}: provider must be an object with exec and optional cwd")
        provider = parse_exec(provider_raw, base_dir, f"{source}: provider")
    return Manifest(tools=tools, hooks=hooks, provider=provider, source=source)


def with_hook(manifest: Manifest, entry: dict[str, Any], base_dir: Path) -> Manifest:
    """``manifest`` with one more hook entry (``{"events", "exec", "cwd"?, "module"?}``) after the others."""
    events = entry.get("events")
    if not isinstance(events, list) or not events or not all(isinstance(e, str) for e in events):
        raise ConfigError(f"{manifest.source}: an injected hook needs a non-empty events list")
    hook = HookEntry(
        events=tuple(events), exec=parse_exec(entry, base_dir, "injected hook"), module=entry.get("module")
    )
    return Manifest(
        tools=manifest.tools, hooks=(*manifest.hooks, hook), provider=manifest.provider, source=manifest.source
    )
