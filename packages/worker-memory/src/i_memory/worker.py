"""The memory worker: its handlers registered on one i_protocol.Worker."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from i_protocol import Paths, Request, Worker, WorkerConfig

from . import tools
from .__about__ import __version__
from .errors import MemoryStoreError
from .settings import MemorySettings, parse_settings
from .snapshot import memory_context
from .store import MemoryStore

if TYPE_CHECKING:
    from collections.abc import Callable

worker = Worker("memory", __version__, dist_name="i-worker-memory")


def settings_for(request: Request) -> MemorySettings:
    """The module settings from ``--config FILE`` or ``config_dir/memory.json`` (defaults when absent)."""
    config = request.config()
    return parse_settings(config.data, config.path or "memory.json")


def check_config(config: WorkerConfig, paths: Paths) -> None:
    """The config check (``i-memory --check-config``, each first request): memory.json's fields."""
    parse_settings(config.data, config.path or "memory.json")


if hasattr(worker, "config_check"):  # an older i-protocol has none: the config is read at its first use
    worker.config_check()(check_config)


def store_for(request: Request, settings: MemorySettings) -> MemoryStore:
    """The store of the request's workspace: identity and paths from the request context only."""
    return MemoryStore(request.state_dir(), settings.limits)


def _tool(name: str, action: Callable[[dict[str, Any], MemoryStore], str]) -> None:
    def handle(arguments: dict[str, Any], request: Request) -> str:
        settings = settings_for(request)
        if not settings.enabled:
            source = request.config().path or "memory.json"
            raise MemoryStoreError(f"{name}: memory is disabled ('enabled': false in {source})")
        return action(arguments, store_for(request, settings))

    worker.tool(name)(handle)


for _name in ("memory_get", "memory_set", "memory_delete", "memory_list"):
    _tool(_name, getattr(tools, _name))


@worker.hook("before_turn")
def before_turn(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Add ``context.memory`` (the full current memory) to the turn data when injection is on."""
    settings = settings_for(request)
    if not (settings.enabled and settings.inject):
        return data
    context = data.get("context", {})
    if not isinstance(context, dict):
        raise MemoryStoreError(f"before_turn: data.context must be an object, got {type(context).__name__}")
    entries = store_for(request, settings).entries()
    return {**data, "context": {**context, "memory": memory_context(entries)}}


@worker.command("schemas")
def print_schemas(argv: list[str]) -> int:
    """``i-memory schemas``: print the model-facing tool schemas as JSON."""
    if argv:
        print(f"i-memory schemas: takes no arguments, got {' '.join(argv)}", file=sys.stderr)
        return 2
    import orjson

    from .schemas import TOOLS

    sys.stdout.write(orjson.dumps(TOOLS, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0
