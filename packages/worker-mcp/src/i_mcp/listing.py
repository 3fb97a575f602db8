"""``i-mcp --list [--start] [--config FILE]``: each server of mcp.json, its state and its tools.

Without ``--start`` nothing is started (``i --runtime versions`` runs it, under a short timeout):
the state comes from each server's cached tool list (``listed``: the tools a session offers;
``not listed yet``: it starts and is listed at the next session) or from its entry (``invalid``).
With ``--start`` every server is started and listed now, as at a session start (``ok``,
``failed`` with the end of its stderr, ``starting`` when it is not up within the list wait).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from i_protocol import paths_from_env
from i_protocol.config import discover_config_path, load_config_file
from i_protocol.errors import ProtocolError

from . import cache
from .settings import parse_config, worker_variables

MAX_NAMES = 20
"""Tool names shown per server; more are counted."""


def list_servers(args: Sequence[str]) -> int:
    """Print one line per server (exit 0), or the configuration error (exit 3)."""
    start = "--start" in args
    explicit = next((args[i + 1] for i, arg in enumerate(args[:-1]) if arg == "--config"), None)
    paths = paths_from_env()
    path, required = discover_config_path("mcp", paths.config_dir, explicit)
    try:
        config = load_config_file(path, required=required)
        parsed = parse_config(config.data, config.path or path, config.base_dir, worker_variables(paths.as_dict()))
    except ProtocolError as exc:
        print(f"i-mcp: {exc}", file=sys.stderr)
        return 3
    print(f"{path}{'' if os.path.exists(path) else ' (absent: no server)'}")
    for entry in parsed.broken:
        print(f"{entry.name}: invalid: {entry.error}")
    if start and parsed.specs:
        from .client import Servers

        servers = Servers()
        try:
            found = servers.list_tools(
                parsed.specs,
                os.getcwd(),
                lambda spec, tools: cache.store_tools(paths.cache_dir, spec.digest, spec.name, tools),
            )
        finally:
            servers.close_all(grace=0.9)
        for spec, got in zip(parsed.specs, found, strict=True):
            if got.tools is not None:
                print(f"{spec.name}: ok, {_tools(got.tools)}")
            elif got.starting:
                print(f"{spec.name}: starting (not up within {servers.list_wait:g} s)")
            else:
                print(f"{spec.name}: failed: {got.failure}")
        return 0
    for spec in parsed.specs:
        tools = cache.load_tools(paths.cache_dir, spec.digest)
        state = f"listed, {_tools(tools)}" if tools is not None else "not listed yet (it starts at the next session)"
        print(f"{spec.name}: {state}")
    return 0


def _tools(tools: list[dict[str, object]]) -> str:
    names = [str(tool["name"]) for tool in tools]
    more = f", … ({len(names) - MAX_NAMES} more)" if len(names) > MAX_NAMES else ""
    return f"{len(names)} tool{'s' if len(names) != 1 else ''}: {', '.join(names[:MAX_NAMES])}{more}"
