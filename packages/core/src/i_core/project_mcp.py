"""A project's ``.mcp.json`` (the file Claude Code reads), used only once the user approved it.

The file starts programs from the repository, so a checkout must never run them by itself: the
core passes it to the ``mcp`` worker only when the user approved, interactively, this workspace
*and this content* (its SHA-256). Approvals live in ``data_dir/mcp-approvals.json``
(``{"format", "approved": {workspace_id: [digest, …]}}``, locked, written atomically), never in the
project; a changed file asks again. A run without a terminal, and ``--yolo``, never approve: they use
an approval given before, or leave the file out and say how to approve it.

How it reaches i-mcp: the top-level request field ``mcp_project: {"path", "sha256"}`` (request
context, like ``workspace``: set by the core, never by the model). i-mcp reads the file, checks its
digest against ``sha256`` and uses its servers after the user's own, never as trusted ones.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from typing import Any

import orjson

from i_protocol.errors import FileError
from i_protocol.files import locked_update, read_bytes, read_json

FILE_NAME = ".mcp.json"
FORMAT = "i-mcp-approvals/1"
MAX_FILE_BYTES = 1024 * 1024
MAX_APPROVALS_BYTES = 4 * 1024 * 1024
MAX_DIGESTS = 20
"""Approved contents kept per workspace (the newest ones)."""


def approvals_path(data_dir: str) -> str:
    """Where approvals are kept (under the data directory, never in a project)."""
    return os.path.join(data_dir, "mcp-approvals.json")


def project_file(workspace: str) -> tuple[str, str] | None:
    """``(path, sha256)`` of the workspace's ``.mcp.json``, or None when there is none (or it cannot be read)."""
    path = os.path.join(workspace, FILE_NAME)
    try:
        content = read_bytes(path, MAX_FILE_BYTES, what="project .mcp.json")
    except (OSError, FileError):
        return None
    return path, hashlib.sha256(content).hexdigest()


def approved(data_dir: str, workspace_id: str, digest: str) -> bool:
    """True when this content of the workspace's file was approved before."""
    return digest in _approvals(read_approvals(data_dir)).get(workspace_id, [])


def read_approvals(data_dir: str) -> Any:
    try:
        return read_json(approvals_path(data_dir), MAX_APPROVALS_BYTES, what="MCP approvals")
    except (OSError, FileError):
        return None


def _approvals(data: Any) -> dict[str, list[str]]:
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("approved"), dict):
        return {}
    return {
        key: [d for d in value if isinstance(d, str)]
        for key, value in data["approved"].items()
        if isinstance(key, str) and isinstance(value, list)
    }


def approve(data_dir: str, workspace_id: str, digest: str) -> None:
    """Record the approval of ``digest`` for the workspace (locked read-modify-write, atomic)."""
    path = approvals_path(data_dir)
    os.makedirs(data_dir, exist_ok=True)
    with locked_update(path, timeout=10) as file:
        table = _approvals(read_approvals(data_dir))
        digests = [d for d in table.get(workspace_id, []) if d != digest] + [digest]
        table[workspace_id] = digests[-MAX_DIGESTS:]
        file.replace(orjson.dumps({"format": FORMAT, "approved": table}))


def describe(path: str) -> str:
    """The servers a project file names, ``NAME: COMMAND ARG…`` (for the approval question)."""
    try:
        data = orjson.loads(read_bytes(path, MAX_FILE_BYTES, what="project .mcp.json"))
    except (OSError, FileError, orjson.JSONDecodeError):
        return "(not readable as JSON)"
    servers = data.get("mcpServers") if isinstance(data, dict) else None
    if not isinstance(servers, dict) or not servers:
        return "(no server)"
    lines = []
    for name, entry in list(servers.items())[:20]:
        entry = entry if isinstance(entry, dict) else {}
        argv = [str(entry.get("command", entry.get("url", "?")))] + [str(a) for a in entry.get("args", []) or []]
        lines.append(f"  {name}: {' '.join(argv)[:200]}")
    return "\n".join(lines)


def project_context(
    workspace: str,
    workspace_id: str,
    data_dir: str,
    ask: Callable[[str], bool] | None,
    note: Callable[[str], None],
) -> dict[str, str] | None:
    """``{"path", "sha256"}`` for the request context when the workspace's ``.mcp.json`` is approved
    (asking ``ask`` when it is not yet and a user can answer), else None (said through ``note``)."""
    found = project_file(workspace)
    if found is None:
        return None
    path, digest = found
    if approved(data_dir, workspace_id, digest):
        return {"path": path, "sha256": digest}
    if ask is None:
        note(f"{path} is not used: its MCP servers run only once you approve this file in an interactive `i` here")
        return None
    question = f"{path} asks to start these MCP servers from the project:\n{describe(path)}\nUse them?"
    if not ask(question):
        note(f"{path} is not used (not approved)")
        return None
    approve(data_dir, workspace_id, digest)
    return {"path": path, "sha256": digest}
