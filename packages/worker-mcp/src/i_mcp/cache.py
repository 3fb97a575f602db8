"""Each server's tool list on disk, so that a session starts without starting its servers.

``cache_dir/mcp/tools/<digest>.json`` = ``{"server", "tools": [{"name", "description",
"input_schema"}]}``, keyed by the digest of the server's mcp.json entry: editing the entry (a new
command, an argument, an env value) changes the key, and a server is listed afresh whenever it
starts, so the next session sees a changed tool list. The file is derived data: one that cannot
be read is listed again (never an error), and it is replaced atomically.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

from i_protocol.atomic import atomic_write_bytes
from i_protocol.errors import FileError
from i_protocol.files import read_json

MAX_CACHE_BYTES = 8 * 1024 * 1024


def cache_file(cache_dir: str, digest: str) -> Path:
    """Where the tool list of the entry with ``digest`` is kept."""
    return Path(cache_dir) / "mcp" / "tools" / f"{digest}.json"


def load_tools(cache_dir: str, digest: str) -> list[dict[str, Any]] | None:
    """The cached tool list, or None when there is none or it is unreadable or malformed."""
    try:
        data = read_json(cache_file(cache_dir, digest), MAX_CACHE_BYTES, what="MCP tool cache")
    except (OSError, FileError):
        return None
    tools = data.get("tools") if isinstance(data, dict) else None
    if not isinstance(tools, list) or not all(_valid(tool) for tool in tools):
        return None
    return tools


def store_tools(cache_dir: str, digest: str, server: str, tools: list[dict[str, Any]]) -> None:
    """Replace the cached tool list (a failure to write only costs a listing next time)."""
    try:
        atomic_write_bytes(
            cache_file(cache_dir, digest), orjson.dumps({"server": server, "tools": tools}), durable=False
        )
    except OSError as exc:
        print(f"i-mcp: could not cache the tools of {server!r}: {exc}", file=sys.stderr)


def _valid(tool: object) -> bool:
    return (
        isinstance(tool, dict)
        and isinstance(tool.get("name"), str)
        and isinstance(tool.get("description"), str)
        and isinstance(tool.get("input_schema"), dict)
    )
