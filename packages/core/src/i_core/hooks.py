"""Running hooks and external tools of a manifest through the worker pool."""

from __future__ import annotations

from typing import Any

from .errors import WorkerFailure
from .manifest import HookEntry, Manifest
from .pool import WorkerPool


class HookRunner:
    """Chains the hooks of each event in manifest order; each gets the previous one's full data."""

    def __init__(self, manifest: Manifest, pool: WorkerPool, context: dict[str, Any]) -> None:
        self.manifest = manifest
        self.pool = pool
        # Top-level request context (workspace, workspace_id): fixed by the core, never by the model.
        self.context = dict(context)
        self._by_event: dict[str, list[HookEntry]] = {}

    def subscribers(self, event: str) -> list[HookEntry]:
        """Hooks subscribed to ``event`` (computed once per event)."""
        found = self._by_event.get(event)
        if found is None:
            found = self._by_event[event] = self.manifest.hooks_for(event)
        return found

    def has(self, event: str) -> bool:
        """True when at least one hook handles ``event``."""
        return bool(self.subscribers(event))

    def run(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Pass ``data`` through every subscriber of ``event``; an event nobody handles costs nothing."""
        for hook in self.subscribers(event):
            try:
                data = self.pool.call(hook.exec, event, data, self.context)
            except WorkerFailure as exc:
                label = hook.module or hook.exec.argv[0]
                raise WorkerFailure(f"hook {label!r} failed on {event!r}: {exc}") from None
        return data

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the external tool ``name`` and return its result object (``output``, ``images``)."""
        tool = self.manifest.tool(name)
        if tool is None:
            raise WorkerFailure(f"unknown tool {name!r}")
        try:
            return self.pool.call(tool.exec, "tool", {"name": name, "arguments": arguments}, self.context)
        except WorkerFailure as exc:
            raise WorkerFailure(f"tool {name!r} failed: {exc}") from None
