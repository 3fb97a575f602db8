"""The official modules: which events and tools each one declares, and which profiles select them.

Tool schemas and event lists belong to the module, not to the implementation: a binding in
bindings.json replaces the executable of every entry of a module but never these declarations.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True)
class ModuleSpec:
    """One module: its events, its tools, and where its official implementation comes from."""

    name: str
    events: tuple[str, ...] = ()
    tools: tuple[dict[str, Any], ...] = field(default=())
    package: str | None = None  # pip distribution of an external worker
    script: str | None = None  # its console script
    bundled: bool = False  # runs as `i --runtime worker NAME`
    only_with: str | None = None
    """A file in config_dir without which a profile skips the module (mcp.json: no servers, nothing to run)."""
    ahead: tuple[str, ...] = ()
    """Of ``events``, those whose hook entry goes ahead of every other module's hooks: observers that
    must see the provider's own answer before a wire adapter converts or rejects it (seed 001 §6)."""

    def hook_groups(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(the ``ahead`` events, the other events): one manifest hook entry each when not empty."""
        return self.ahead, tuple(event for event in self.events if event not in self.ahead)


def _tool(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    }


def _worker_tools(module: str) -> tuple[dict[str, Any], ...]:
    # The public schemas of external workers' tools, copied from `i-memory schemas` / `i-web schemas`:
    # they belong to the module's contract, so a binding cannot change them.
    data = orjson.loads((Path(__file__).parent / "tool_schemas.json").read_bytes())
    return tuple(data[module])


_MEMORY_TOOLS = _worker_tools("memory")
_WEB_TOOLS = _worker_tools("web")

_SKILL_TOOLS = (
    _tool("skill_load", "Load a skill's full text by name.", {"name": {"type": "string"}}, ["name"]),
    _tool(
        "skill_read",
        "Read a file a skill references, by its path relative to the skill's folder.",
        {"name": {"type": "string"}, "path": {"type": "string"}},
        ["name", "path"],
    ),
)

MODULES: dict[str, ModuleSpec] = {
    spec.name: spec
    for spec in (
        ModuleSpec("approval", events=("tool_approval",), bundled=True),
        ModuleSpec("prompts", events=("system_prompt",), bundled=True),
        ModuleSpec("skills", events=("before_turn",), tools=_SKILL_TOOLS, bundled=True),
        ModuleSpec(
            "memory", events=("before_turn",), tools=_MEMORY_TOOLS, package="i-worker-memory", script="i-memory"
        ),
        ModuleSpec("budget", events=("context_budget",), package="i-worker-budget", script="i-budget"),
        ModuleSpec(
            "compact",
            events=("compact_plan", "before_compact", "after_compact", "after_compact_commit"),
            package="i-worker-compact",
            script="i-compact",
        ),
        ModuleSpec("web", tools=_WEB_TOOLS, package="i-worker-web", script="i-web"),
        # Per-turn file checkpoints: records around each tool call, answers `undo` (SPEC §3.4).
        ModuleSpec(
            "checkpoint",
            events=("before_tool", "after_tool", "undo"),
            package="i-worker-checkpoint",
            script="i-checkpoint",
        ),
        # Tools found at run time (tools_list), called through the same worker; only with servers to run.
        ModuleSpec("mcp", events=("tools_list",), package="i-worker-mcp", script="i-mcp", only_with="mcp.json"),
        # Cache preparation runs after the wire transform (responses, listed before it in a profile)
        # in before_request; its observation runs ahead of every hook, before responses converts or
        # rejects the answer in after_response.
        ModuleSpec(
            "cache",
            events=("before_request", "request_retry", "after_response"),
            package="i-worker-cache",
            script="i-cache",
            ahead=("after_response",),
        ),
        ModuleSpec("responses", events=("before_request", "after_response"), bundled=True),
        # The connectivity check (seed 001 §10): no tools, a small output cap, tool-call replies refused.
        ModuleSpec("smoke", events=("before_request", "after_response"), bundled=True),
        # Injected by the interactive console whatever the profile (never part of one): lines typed
        # while the model works, from the queue file named by an appended `--queue PATH`.
        ModuleSpec("steering", events=("before_turn", "after_save"), bundled=True),
    )
}

_FULL = (
    "approval",
    "prompts",
    "skills",
    "memory",
    "budget",
    "compact",
    "web",
    "mcp",
    "responses",
    "cache",
    "checkpoint",
)

PROFILES: dict[str, tuple[str, ...]] = {
    "full": _FULL,
    # Not checkpoint: a standard setup without i-worker-checkpoint installed must keep starting (a
    # selected module that is missing is an error, never skipped), and a snapshot per shell call
    # costs time in large work trees. Undo is opt-in: profile "checkpoint", or "full".
    "standard": tuple(name for name in _FULL if name not in ("responses", "checkpoint")),
    "approval": ("approval",),
    "budget": ("budget",),
    "compact": ("budget", "compact"),
    "cache": ("cache",),
    "memory": ("memory",),
    "checkpoint": ("checkpoint",),
    "search": (),  # glob and search are built-in tools: nothing extra to register
    "skills": ("skills",),
    "web": ("web",),
    "mcp": ("mcp",),
    "responses": ("responses",),
    "responses-budget": ("responses", "budget"),
    "responses-compact": ("responses", "budget", "compact"),
    "smoke": ("smoke", "cache"),
    "smoke-thinking": ("smoke", "cache"),
    # For 4k-8k windows: standard without the modules that add tools (skills, memory, web), so only
    # the built-in tools are offered. Chosen by the user (init writes it for a small window); never
    # switched to automatically (no silent change of what is offered).
    "small": tuple(name for name in _FULL if name not in ("responses", "checkpoint", "skills", "memory", "web")),
}

PROFILE_ARGS: dict[str, dict[str, tuple[str, ...]]] = {
    "smoke": {"cache": ("smoke",)},
    "smoke-thinking": {"smoke": ("--output-cap", "1024"), "cache": ("smoke",)},
}
"""Arguments a profile appends to a module's official program (never to a bindings.json binding,
whose argv is the user's): the smoke profiles' cap, and the cache worker's `smoke` mode (observe
only, statistics in metrics/smoke-cache.json, whatever cache.json says)."""


CONSOLE_MODULES = ("steering",)
"""Modules the console adds itself: profiles and plugins.json's ``disabled`` do not remove them."""
