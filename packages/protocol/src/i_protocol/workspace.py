"""Workspace identity: one UUID per canonical workspace path, kept in ``data_dir/workspaces.json``.

The core and every worker that keeps per-workspace state use this module, so they agree on
the id. The registry is guarded by a file lock, replaced atomically, bounded to 10000 entries
and a 2 MB read, and never rewritten when the binding already exists.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

from .errors import FileDecodeError, FileTooLarge, LockTimeout, WorkspaceError
from .files import locked_update, parse_json, read_bytes
from .jsonsafe import dumps_safe

REGISTRY_NAME = "workspaces.json"
MAX_ENTRIES = 10_000
MAX_REGISTRY_BYTES = 2 * 1024 * 1024
LOCK_TIMEOUT_S = 10.0


def canonical_workspace(path: str | os.PathLike[str]) -> str:
    """The canonical form of a workspace path: absolute, symlinks resolved, must exist."""
    resolved = Path(path).expanduser()
    try:
        resolved = resolved.resolve(strict=True)
    except (OSError, RuntimeError) as exc:
        raise WorkspaceError(f"workspace {str(path)!r} cannot be resolved: {exc}") from None
    if not resolved.is_dir():
        raise WorkspaceError(f"workspace {str(path)!r} is not a directory")
    return str(resolved)


def workspace_digest(canonical: str) -> str:
    """The registry key of a canonical workspace path (SHA-256 of its UTF-8 bytes)."""
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def _read_registry(path: Path) -> dict[str, Any]:
    try:
        raw = read_bytes(path, MAX_REGISTRY_BYTES, what="workspace registry")
        if not raw.strip():
            return {}
        data = parse_json(raw, path, what="workspace registry", lossless=True)  # keeps undecodable names
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise WorkspaceError(f"{path}: cannot read the workspace registry: {exc}") from None
    except FileTooLarge as exc:
        raise WorkspaceError(str(exc)) from exc
    except FileDecodeError as exc:
        raise WorkspaceError(f"{exc}; fix or move it aside") from exc
    if not isinstance(data, dict) or not isinstance(data.get("workspaces", {}), dict):
        raise WorkspaceError(f"{path}: workspace registry must be an object with a 'workspaces' object")
    return data


def _lookup(data: dict[str, Any], digest: str) -> str | None:
    entry = data.get("workspaces", {}).get(digest)
    if isinstance(entry, dict) and isinstance(entry.get("id"), str):
        try:
            return str(uuid.UUID(entry["id"]))
        except ValueError:
            return None
    return None


def workspace_id_for(workspace: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> str:
    """The UUID bound to ``workspace``, assigning and recording one the first time."""
    canonical = canonical_workspace(workspace)
    digest = workspace_digest(canonical)
    registry = Path(data_dir) / REGISTRY_NAME
    # Fast path without the lock: an existing binding is never rewritten, so a read is enough.
    found = _lookup(_read_registry(registry), digest)
    if found is not None:
        return found
    try:
        with locked_update(registry, timeout=LOCK_TIMEOUT_S) as file:
            data = _read_registry(registry)
            found = _lookup(data, digest)
            if found is not None:
                return found
            entries = data.setdefault("workspaces", {})
            if len(entries) >= MAX_ENTRIES:
                raise WorkspaceError(
                    f"{registry}: the workspace registry already holds {MAX_ENTRIES} entries; "
                    "remove stale ones or pass an explicit workspace_id"
                )
            new_id = str(uuid.uuid4())
            entries[digest] = {"id": new_id, "path": canonical}
            data.setdefault("version", 1)
            body = dumps_safe(data, indent=True)
            if len(body) > MAX_REGISTRY_BYTES:
                raise WorkspaceError(f"{registry}: registry would exceed {MAX_REGISTRY_BYTES} bytes")
            file.replace(body)
            return new_id
    except LockTimeout as exc:
        raise WorkspaceError(str(exc)) from exc


def workspace_state_dir(workspace_id: str, data_dir: str | os.PathLike[str]) -> Path:
    """``data_dir/workspaces/<id>/``: where per-workspace state of every module lives."""
    return Path(data_dir) / "workspaces" / str(uuid.UUID(workspace_id))
