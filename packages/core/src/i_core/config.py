"""The API configuration (``config_dir/config.json``), validated field by field.

Credentials are only ever referenced: ``api_key_env`` names an environment variable; a literal
key in the file is refused: a field whose name looks like a credential anywhere in the file (top
level, and the keys of ``extra_body`` and ``budget`` at any depth), and a query parameter of
``base_url`` that looks like one. Names are compared case-insensitively without ``-``/``_``.

``provider: {exec, cwd?, api_key_env?}`` binds a provider worker (``providers/worker.py``); it wins
over a manifest's or bindings.json's provider. With a provider bound, ``protocol`` may be any
non-empty string: it is passed through to the provider (seed 001 §4); without one, only the
built-in protocols work (``ModelClient`` says so before any request).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from .archive import DEFAULT_MAX_BYTES as DEFAULT_ARCHIVE_MAX_BYTES
from .errors import ConfigError, blocking_file
from .jsonfile import read_json_object
from .manifest import Exec, parse_exec
from .providers.omission import OMITTABLE
from .providers.reply import RESERVED_FIELDS

PROTOCOLS = ("openai", "deepseek", "anthropic", "responses")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_NO_CREDENTIALS = (
    "never store credentials in the config; put the key in an environment variable and name it in api_key_env"
)
_TOP_FIELDS = {
    "protocol",
    "base_url",
    "model",
    "api_key_env",
    "max_tokens",
    "use_max_tokens",
    "io_limit_bytes",
    "archive_max_bytes",
    "budget",
    "extra_body",
    "stream",
    "timeout",
    "retries",
    "provider",
    "omit_fields",
    "prepare",
}
_PROVIDER_FIELDS = ("exec", "cwd", "api_key_env")


@dataclass(frozen=True)
class ApiConfig:
    """A validated config.json."""

    protocol: str
    base_url: str
    model: str
    api_key_env: str | None
    max_tokens: int
    use_max_tokens: bool
    io_limit_bytes: int
    budget: dict[str, Any]
    extra_body: dict[str, Any] = field(default_factory=dict)
    stream: bool = True
    timeout: float = 600.0
    retries: int = 3
    source: str = "config.json"
    archive_max_bytes: int = DEFAULT_ARCHIVE_MAX_BYTES
    """The size bound of each session's archive of compacted messages (``archive.py``)."""
    provider: Exec | None = None
    """The provider worker config.json binds, resolved against its folder (None: none named here)."""
    omit_fields: tuple[str, ...] = ()
    """Request fields left out for a server that refuses them (``providers/omission.py``)."""
    prepare: str = "auto"
    """``auto``: the console prepares the next compaction's summary while the user reads
    (``prepare.py``); ``off``: every summary is made at the trigger, in the foreground."""

    def api_key(self, environ: dict[str, str] | None = None) -> str | None:
        """The key read from the named environment variable at call time (never stored)."""
        if self.api_key_env is None:
            return None
        env = os.environ if environ is None else environ
        value = env.get(self.api_key_env)
        return value or None

    @property
    def origin(self) -> tuple[str, str]:
        """(scheme, host:port) of base_url: hooks may never send a request elsewhere."""
        return origin_of(self.base_url)


def origin_of(url: str) -> tuple[str, str]:
    """The origin of a URL as (scheme, netloc with explicit port)."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return (parts.scheme.lower(), f"{(parts.hostname or '').lower()}:{port}")


def _credential_name(name: str, *, query: bool = False) -> bool:
    # The one name rule lives in i_protocol.credentials (the MCP worker applies it to env names),
    # apart from the secret table, so that validating config.json compiles no pattern.
    from i_protocol.credentials import looks_like_credential

    return looks_like_credential(name, query=query)


def _credential_field(value: object, where: str) -> str | None:
    """The dotted path of the first credential-looking key in ``value`` (objects and lists, any depth)."""
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            if _credential_name(str(key)):
                return path
            found = _credential_field(item, path)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _credential_field(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


def _refuse_credentials(raw: dict[str, Any], source: str) -> None:
    """A ConfigError for any credential-looking field or base_url query parameter; never shows a value."""
    for key in raw:
        if key != "api_key_env" and _credential_name(str(key)):
            raise ConfigError(f"{source}: {key!r} is not allowed: {_NO_CREDENTIALS}")
    for name in ("extra_body", "budget"):
        found = _credential_field(raw.get(name), name)
        if found is not None:
            raise ConfigError(f"{source}: {found!r} looks like a credential and is not allowed: {_NO_CREDENTIALS}")
    base_url = raw.get("base_url")
    if isinstance(base_url, str):
        try:
            parts = urlsplit(base_url)
        except ValueError:
            return  # reported with the other base_url checks
        for text in (parts.query, parts.fragment):
            for key, _value in parse_qsl(text, keep_blank_values=True):
                if _credential_name(key, query=True):
                    raise ConfigError(
                        f"{source}: base_url has a query parameter {key!r} that looks like a credential: "
                        f"{_NO_CREDENTIALS}"
                    )


def _int(raw: dict[str, Any], key: str, where: str, low: int, high: int, default: int | None) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(f"{where}: {key} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise ConfigError(f"{where}: {key} must be between {low} and {high}, got {value}")
    return value


def _budget(raw: object, where: str) -> dict[str, Any]:
    """The ``budget`` object as given (absent: ``{}``). Its fields, their ranges and defaults
    (``context_window`` is required; ``output_reserve`` defaults to max_tokens) are the budget
    worker's to validate: the core checks only that it is an object and passes it through."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: budget must be an object, got {type(raw).__name__}")
    mode = raw.get("exact_count", "off")
    if mode not in ("off", "tokenize"):  # the core's own field: it asks the server, not the worker
        raise ConfigError(f'{where}: budget.exact_count must be "off" or "tokenize", got {mode!r}')
    return dict(raw)


def _env_name(value: object, where: str, source: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not _ENV_NAME.fullmatch(value)):
        raise ConfigError(f"{source}: {where} must be the NAME of an environment variable, got {value!r}")
    return value


def _provider(raw: object, source: str) -> Exec | None:
    """config.json's ``provider``: its program resolved like a manifest entry's, relative to the file's folder.

    ``api_key_env`` is the one exception to the worker environment allow-list: that variable (and
    no other credential) reaches the provider's process, under its own name.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: provider must be an object with exec, optional cwd and api_key_env")
    unknown = sorted(set(raw) - set(_PROVIDER_FIELDS))
    if unknown:
        raise ConfigError(
            f"{source}: provider has unknown field(s): {', '.join(unknown)}; known: exec, cwd, api_key_env"
        )
    key_env = _env_name(raw.get("api_key_env"), "provider.api_key_env", source)
    spec = parse_exec(raw, Path(source).absolute().parent, f"{source}: provider")
    return replace(spec, env=(key_env,)) if key_env else spec


def parse_api_config(raw: dict[str, Any], source: str = "config.json") -> ApiConfig:
    """Validate a config.json object; every problem is a ConfigError naming the field."""
    _refuse_credentials(raw, source)
    unknown = sorted(set(raw) - _TOP_FIELDS)
    if unknown:
        raise ConfigError(f"{source}: unknown field(s): {', '.join(unknown)}")
    protocol = raw.get("protocol", "openai")
    if not isinstance(protocol, str) or not protocol.strip():
        raise ConfigError(
            f"{source}: protocol must be one of {', '.join(PROTOCOLS)} (or, with a provider worker, "
            f"any non-empty string), got {protocol!r}"
        )
    base_url = raw.get("base_url")
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise ConfigError(
            f"{source}: base_url must be an http(s) URL such as http://127.0.0.1:8080/v1, got {base_url!r}"
        )
    if parts.username or parts.password:
        raise ConfigError(f"{source}: base_url must not contain credentials: {_NO_CREDENTIALS}")
    model = raw.get("model")
    if not isinstance(model, str) or not model.strip():
        raise ConfigError(f"{source}: model must be a non-empty string")
    api_key_env = _env_name(raw.get("api_key_env"), "api_key_env", source)
    max_tokens = _int(raw, "max_tokens", source, 1, 10_000_000, 4096)
    use_max_tokens = raw.get("use_max_tokens", False)
    if not isinstance(use_max_tokens, bool):
        raise ConfigError(f"{source}: use_max_tokens must be true or false")
    io_limit = _int(raw, "io_limit_bytes", source, 1024, 64 * 1024 * 1024, 1024 * 1024)
    archive_max_bytes = _int(raw, "archive_max_bytes", source, 1024, 1 << 40, DEFAULT_ARCHIVE_MAX_BYTES)
    extra_body = raw.get("extra_body", {})
    if not isinstance(extra_body, dict):
        raise ConfigError(f"{source}: extra_body must be an object")
    reserved = sorted(set(extra_body) & RESERVED_FIELDS)
    if reserved:
        raise ConfigError(f"{source}: extra_body may not override reserved field(s): {', '.join(reserved)}")
    stream = raw.get("stream", True)
    if not isinstance(stream, bool):
        raise ConfigError(f"{source}: stream must be true or false")
    timeout = raw.get("timeout", 600)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 1 <= timeout <= 3600:
        raise ConfigError(f"{source}: timeout must be a number of seconds between 1 and 3600")
    retries = _int(raw, "retries", source, 0, 10, 3)
    omit_fields = _omit_fields(raw.get("omit_fields", []), source)
    prepare = raw.get("prepare", "auto")
    if prepare not in ("auto", "off"):
        raise ConfigError(f'{source}: prepare must be "auto" or "off", got {prepare!r}')
    assert isinstance(base_url, str)  # checked above, with the scheme and host
    return ApiConfig(
        protocol=protocol,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env=api_key_env,
        max_tokens=max_tokens,
        use_max_tokens=use_max_tokens,
        io_limit_bytes=io_limit,
        budget=_budget(raw.get("budget"), source),
        extra_body=extra_body,
        stream=stream,
        timeout=float(timeout),
        retries=retries,
        source=source,
        archive_max_bytes=archive_max_bytes,
        provider=_provider(raw.get("provider"), source),
        omit_fields=omit_fields,
        prepare=prepare,
    )


def _omit_fields(value: Any, source: str) -> tuple[str, ...]:
    if not isinstance(value, list) or any(field not in OMITTABLE for field in value):
        raise ConfigError(
            f"{source}: omit_fields must be a list of request fields to leave out, of: {', '.join(OMITTABLE)}"
        )
    return tuple(dict.fromkeys(value))


def load_api_config(path: Path) -> ApiConfig:
    """Read and validate config.json at ``path``."""
    if not path.exists():
        blocker = blocking_file(path.parent)
        if blocker is not None:
            raise ConfigError(
                f"{path}: cannot read the API config: {blocker} is a file, not a folder "
                "(check I_CONFIG_DIR or --config)"
            )
        raise ConfigError(f"{path}: config.json does not exist; run `i --runtime init` and point it at a model")
    return parse_api_config(read_json_object(path, what="API config"), str(path))
