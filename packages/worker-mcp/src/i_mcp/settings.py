"""``config_dir/mcp.json``: the MCP servers to run, in the ``mcpServers`` shape of Claude Desktop and Cursor.

``{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}, "cwd"?: "...", "timeout"?: 60,
"idle_timeout"?: 14, "startup_timeout"?: 120, "required"?: false}}}``.
One rule of ours: an ``env`` value is a literal non-secret string or ``{"file": PATH}``, a file
this worker reads when it starts that server and passes to it alone. A literal value under a
credential-looking name (``GITHUB_TOKEN``: the name rule of the core's config.json), or a literal
that holds a secret by its form (``ghp_…``, ``--password=…``), is refused, as in ``args``.
``${VAR}`` and ``${VAR:-default}`` in ``command``, ``args``, ``env`` values and ``cwd`` expand
the variables a worker has (SPEC §3.2: ``EXPANDABLE``); any other name is an error naming it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson

from i_protocol.errors import FileError, SettingsError
from i_protocol.settings import (
    optional_bool,
    optional_number,
    optional_object,
    optional_str,
    optional_str_list,
    reject_unknown,
    require_object,
    require_str,
)

from .errors import McpConfigError

if TYPE_CHECKING:
    from i_protocol import Paths, WorkerConfig

DEFAULT_TIMEOUT_S = 60.0
"""How long a call may last while the server reports progress (the core's ceiling is 600 s)."""
MAX_TIMEOUT_S = 600.0
DEFAULT_IDLE_TIMEOUT_S = 14.0
"""How long a call (start-up included) may go without an answer or a progress notification:
below the core's 15 s, so that the worker answers with the failure before the core gives up on it."""
MAX_IDLE_TIMEOUT_S = 14.0
DEFAULT_STARTUP_TIMEOUT_S = 120.0
"""How long a server listed at session start may take to start (an ``npx`` download included)."""
MAX_ENV_FILE_CHARS = 64 * 1024
_SERVER_FIELDS = ("command", "args", "env", "cwd", "timeout", "idle_timeout", "startup_timeout", "required", "type")
EXPANDABLE = (
    "HOME",
    "PATH",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "SystemRoot",
    *(f"I_{d}_DIR" for d in ("CONFIG", "DATA", "CACHE", "RUNTIME")),
)
"""The variables ``${VAR}`` may name: the environment a worker gets (SPEC §3.2), nothing else."""
_VARIABLE = r"\$\{([^}:]*)(?::-([^}]*))?\}"


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
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT_S
    required: bool = False
    """A server the session must not start without (its failure fails ``tools_list``)."""


def worker_variables(paths: Mapping[str, str] | None = None) -> dict[str, str]:
    """The values ``${VAR}`` expands to: this worker's own environment, limited to ``EXPANDABLE``,
    with the request's directories (``paths``: ``{"config_dir": …}``) for the ``I_*_DIR``."""
    found = {name: os.environ[name] for name in EXPANDABLE if name in os.environ}
    for key, value in (paths or {}).items():
        found[f"I_{key.removesuffix('_dir').upper()}_DIR"] = value
    return found


@dataclass(frozen=True)
class BrokenEntry:
    """A server entry that cannot be used as written (``error`` names the file and the field)."""

    name: str
    error: McpConfigError
    required: bool


@dataclass(frozen=True)
class Servers:
    """The entries of one mcp.json: the usable ones and the broken ones, in file order."""

    specs: tuple[ServerSpec, ...]
    broken: tuple[BrokenEntry, ...] = ()


def parse_config(
    data: dict[str, Any], source: str, base_dir: str | None, variables: Mapping[str, str] | None = None
) -> Servers:
    """The servers of an mcp.json object (none when it is absent). A file-level error is a
    ``McpConfigError``; an entry's error makes that entry a ``BrokenEntry``, the others stay usable."""
    known = worker_variables() if variables is None else variables
    try:
        reject_unknown(data, ("mcpServers",), file=source)
        servers = optional_object(data, "mcpServers", {}, file=source)
    except SettingsError as exc:
        raise McpConfigError(str(exc)) from exc
    specs: list[ServerSpec] = []
    broken: list[BrokenEntry] = []
    for name in servers:
        try:
            specs.append(_server(name, servers, source, base_dir, known))
        except (SettingsError, McpConfigError) as exc:
            entry = servers.get(name)
            required = isinstance(entry, dict) and entry.get("required") is True
            error = exc if isinstance(exc, McpConfigError) else McpConfigError(str(exc))
            broken.append(BrokenEntry(name, error, required))
    return Servers(tuple(specs), tuple(broken))


def check_config(config: WorkerConfig, paths: Paths) -> None:
    """The config check of ``i-mcp --check-config``: mcp.json's fields and every server entry (a broken
    entry, which a session leaves out and reports as a problem, is an error here)."""
    parsed = parse_config(config.data, config.path or "mcp.json", config.base_dir, worker_variables(paths.as_dict()))
    if parsed.broken:
        raise parsed.broken[0].error


def parse_servers(
    data: dict[str, Any], source: str, base_dir: str | None, variables: Mapping[str, str] | None = None
) -> tuple[ServerSpec, ...]:
    """The servers of an mcp.json object; any bad field, of any entry, is a ``McpConfigError``."""
    parsed = parse_config(data, source, base_dir, variables)
    if parsed.broken:
        raise parsed.broken[0].error
    return parsed.specs


def _server(
    name: str, servers: dict[str, Any], source: str, base_dir: str | None, variables: Mapping[str, str]
) -> ServerSpec:
    at = f"mcpServers.{name}"
    where = f"{source}: {at}"
    entry = require_object(servers, name, file=source, at="mcpServers")
    reject_unknown(entry, _SERVER_FIELDS, file=source, at=at)
    kind = optional_str(entry, "type", "stdio", file=source, at=at)
    if kind != "stdio":
        raise McpConfigError(f"{where}.type is {kind!r}; only stdio servers are supported")
    command = expand(require_str(entry, "command", file=source, at=at, one_line=True), variables, f"{where}.command")
    args = optional_str_list(entry, "args", [], file=source, at=at)
    for index, arg in enumerate(args):
        _refuse_secret(arg, f"{where}.args[{index}]")
    args = [expand(arg, variables, f"{where}.args[{index}]") for index, arg in enumerate(args)]
    cwd = optional_str(entry, "cwd", None, file=source, at=at)
    if cwd is not None:
        cwd = expand(cwd, variables, f"{where}.cwd")
    timeout = optional_number(
        entry, "timeout", DEFAULT_TIMEOUT_S, file=source, at=at, minimum=0.1, maximum=MAX_TIMEOUT_S
    )
    idle = optional_number(
        entry, "idle_timeout", DEFAULT_IDLE_TIMEOUT_S, file=source, at=at, minimum=0.1, maximum=MAX_IDLE_TIMEOUT_S
    )
    startup = optional_number(
        entry, "startup_timeout", DEFAULT_STARTUP_TIMEOUT_S, file=source, at=at, minimum=0.1, maximum=MAX_TIMEOUT_S
    )
    required = optional_bool(entry, "required", False, file=source, at=at)
    env_entries = optional_object(entry, "env", {}, file=source, at=at)
    env = tuple(_env(key, value, f"{where}.env.{key}", base_dir, variables) for key, value in env_entries.items())
    # Of the entry as written and of what its variables expanded to: a changed HOME is another server.
    expanded = [command, args, cwd, [(k, v) for k, v in env if isinstance(v, str)]]
    digest = hashlib.sha256(orjson.dumps([name, entry, expanded], option=orjson.OPT_SORT_KEYS)).hexdigest()
    return ServerSpec(
        name,
        command,
        tuple(args),
        env,
        _resolve(cwd, base_dir) if cwd is not None else None,
        float(timeout),
        digest,
        where,
        float(min(idle, timeout)),
        float(startup),
        required,
    )


def expand(text: str, variables: Mapping[str, str], where: str) -> str:
    """``text`` with each ``${VAR}`` / ``${VAR:-default}`` replaced; a name outside ``EXPANDABLE``, or one
    that is unset and has no default, is a ``McpConfigError`` naming it."""
    if "${" not in text:
        return text
    import re

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        if name not in EXPANDABLE:
            raise McpConfigError(
                f"{where}: ${{{name}}} is not a variable i-mcp has; it has only {', '.join(EXPANDABLE)} "
                '(a secret goes in a file, as an env {"file": PATH})'
            )
        found = variables.get(name) or default
        if found is None:
            raise McpConfigError(f"{where}: ${{{name}}} is not set here; write ${{{name}:-DEFAULT}} to give a default")
        return found

    return re.sub(_VARIABLE, value, text)


def _env(
    key: str, value: object, where: str, base_dir: str | None, variables: Mapping[str, str]
) -> tuple[str, str | EnvFile]:
    from i_protocol.credentials import looks_like_credential

    if not key or "=" in key or "\0" in key:
        raise McpConfigError(f"{where}: not a valid environment variable name")
    if isinstance(value, dict):
        reject_unknown(value, ("file",), file=None, at=where)
        path = require_str(value, "file", file=None, at=where)
        return key, EnvFile(_resolve(expand(path, variables, f"{where}.file"), base_dir))
    if not isinstance(value, str):
        raise McpConfigError(f'{where} must be a string or {{"file": PATH}}, got {type(value).__name__}')
    if looks_like_credential(key) and not _only_variables(value):
        raise McpConfigError(
            f"{where}: a literal value under a secret-looking name is refused; "
            'put the secret in a file and write {"file": PATH}'
        )
    _refuse_secret(value, where)
    return key, expand(value, variables, where)


def _only_variables(value: str) -> bool:
    """True for a value that is nothing but ``${VAR}`` references (no literal to hold a secret)."""
    import re

    return bool(value) and re.fullmatch(f"(?:{_VARIABLE})+", value) is not None


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
