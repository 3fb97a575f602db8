"""``config_dir/mcp.json``: the MCP servers to run, in the ``mcpServers`` shape of Claude Desktop and Cursor.

``{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}, "cwd"?: "...", "timeout"?: 10}}}``.
One rule of ours: an ``env`` value is a literal non-secret string or ``{"file": PATH}``, a file
this worker reads when it starts that server and passes to it alone. A literal value under a
credential-looking name (``GITHUB_TOKEN``: the name rule of the core's config.json), or a literal
that holds a secret by its form (``ghp_…``, ``--password=…``), is refused, as in ``args``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from typing import Any

import orjson

from i_protocol.errors import FileError, SettingsError
from i_protocol.settings import (
    optional_number,
    optional_object,
    optional_str,
    optional_str_list,
    reject_unknown,
    require_object,
    require_str,
)

from .errors import McpConfigError

DEFAULT_TIMEOUT_S = 10.0
"""Per request to a server (start-up included): below the core's 15 s call deadline."""
MAX_TIMEOUT_S = 14.0
MAX_ENV_FILE_CHARS = 64 * 1024
_SERVER_FIELDS = ("command", "args", "env", "cwd", "timeout", "type")


@dataclass(frozen=True)
class EnvFile:
    """An env value read from a file when the server starts (never stored or logged)."""

    path: str


@dataclass(frozen=True)
class ServerSpec:
    """One server entry, every field checked."""

    name: str
    command: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str | EnvFile], ...]
    cwd: str | None
    timeout: float
    digest: str
    """Of the entry as written: the key of its cached tool list."""
    where: str
    """``mcp.json: mcpServers.NAME``, for messages."""


def parse_servers(data: dict[str, Any], source: str, base_dir: str | None) -> tuple[ServerSpec, ...]:
    """The servers of an mcp.json object (none when it is absent); any bad field is a ``McpConfigError``."""
    try:
        reject_unknown(data, ("mcpServers",), file=source)
        servers = optional_object(data, "mcpServers", {}, file=source)
        return tuple(_server(name, servers, source, base_dir) for name in servers)
    except SettingsError as exc:
        raise McpConfigError(str(exc)) from exc


def _server(name: str, servers: dict[str, Any], source: str, base_dir: str | None) -> ServerSpec:
    at = f"mcpServers.{name}"
    entry = require_object(servers, name, file=source, at="mcpServers")
    reject_unknown(entry, _SERVER_FIELDS, file=source, at=at)
    kind = optional_str(entry, "type", "stdio", file=source, at=at)
    if kind != "stdio":
        raise McpConfigError(f"{source}: {at}.type is {kind!r}; only stdio servers are supported")
    command = require_str(entry, "command", file=source, at=at, one_line=True)
    args = optional_str_list(entry, "args", [], file=source, at=at)
    for index, arg in enumerate(args):
        _refuse_secret(arg, f"{source}: {at}.args[{index}]")
    cwd = optional_str(entry, "cwd", None, file=source, at=at)
    timeout = optional_number(
        entry, "timeout", DEFAULT_TIMEOUT_S, file=source, at=at, minimum=0.1, maximum=MAX_TIMEOUT_S
    )
    env_entries = optional_object(entry, "env", {}, file=source, at=at)
    env = tuple(_env(key, value, f"{source}: {at}.env.{key}", base_dir) for key, value in env_entries.items())
    digest = hashlib.sha256(orjson.dumps([name, entry], option=orjson.OPT_SORT_KEYS)).hexdigest()
    return ServerSpec(
        name,
        command,
        tuple(args),
        env,
        _resolve(cwd, base_dir) if cwd is not None else None,
        float(timeout),
        digest,
        f"{source}: {at}",
    )


def _env(key: str, value: object, where: str, base_dir: str | None) -> tuple[str, str | EnvFile]:
    from i_protocol.credentials import looks_like_credential

    if not key or "=" in key or "\0" in key:
        raise McpConfigError(f"{where}: not a valid environment variable name")
    if isinstance(value, dict):
        reject_unknown(value, ("file",), file=None, at=where)
        path = require_str(value, "file", file=None, at=where)
        return key, EnvFile(_resolve(path, base_dir))
    if not isinstance(value, str):
        raise McpConfigError(f'{where} must be a string or {{"file": PATH}}, got {type(value).__name__}')
    if looks_like_credential(key):
        raise McpConfigError(
            f"{where}: a literal value under a secret-looking name is refused; "
            'put the secret in a file and write {"file": PATH}'
        )
    _refuse_secret(value, where)
    return key, value


def _refuse_secret(text: str, where: str) -> None:
    from i_protocol.secrets import DESCRIPTIONS, find_secrets

    found = find_secrets(text)
    if found:
        what = DESCRIPTIONS.get(found[0].name, found[0].name)
        raise McpConfigError(
            f'{where} holds what looks like a secret ({what}); put it in a file and pass it as an env {{"file": PATH}}'
        )


def _resolve(path: str, base_dir: str | None) -> str:
    expanded = os.path.expanduser(path)
    return expanded if os.path.isabs(expanded) or base_dir is None else os.path.join(base_dir, expanded)


def server_env(spec: ServerSpec) -> dict[str, str]:
    """The environment entries of ``spec`` with each ``{"file"}`` read now (one trailing newline dropped)."""
    from i_protocol.files import read_text

    env: dict[str, str] = {}
    for key, value in spec.env:
        if isinstance(value, EnvFile):
            try:
                text = read_text(value.path, MAX_ENV_FILE_CHARS, what=f"env file of {key}")
            except (OSError, FileError) as exc:
                detail = getattr(exc, "strerror", None) or str(exc)
                raise McpConfigError(f"{spec.where}.env.{key}: cannot read {value.path}: {detail}") from None
            value = text.removesuffix("\n").removesuffix("\r")
        env[key] = value
    return env
