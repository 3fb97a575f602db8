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

from i_protocol.errors import SettingsError
from i_protocol.settings import (
    field_error,
    optional_bool,
    optional_choice,
    optional_int,
    optional_number,
    optional_object,
    reject_unknown,
    require_str,
)

from .archive import DEFAULT_MAX_BYTES as DEFAULT_ARCHIVE_MAX_BYTES
from .errors import ConfigError, blocking_file
from .jsonfile import read_json_object
from .manifest import Exec, parse_exec
from .prices import Prices, parse_prices
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
    "prices",
    "models",
    "prepare",
}
_MODEL_ENTRY_FIELDS = _TOP_FIELDS - {"models", "io_limit_bytes", "archive_max_bytes", "provider"}
"""What an entry of ``models`` may set (``/model NAME`` in the console); the rest is the top level's."""
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
    prices: Prices | None = None
    """What this model's tokens cost (``prices``; ``/status`` shows the cost only with them)."""
    models: dict[str, ApiConfig] = field(default_factory=dict)
    """``models``: the configs the console's ``/model NAME`` switches to, each validated in full."""
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


def _budget(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """The ``budget`` object as given (absent: ``{}``). Its fields, their ranges and defaults
    (``context_window`` is required; ``output_reserve`` defaults to max_tokens) are the budget
    worker's to validate: the core checks only that it is an object and passes it through."""
    budget = optional_object(raw, "budget", {}, file=where)
    # The core's own field: it asks the server, not the worker.
    optional_choice(budget, "exact_count", ("off", "tokenize"), "off", file=where, at="budget")
    return dict(budget)


def _env_name(value: object, where: str, source: str) -> str | None:
    if value is not None and (not isinstance(value, str) or not _ENV_NAME.fullmatch(value)):
        if isinstance(value, str):  # never echoed: a wrong value here may be the key itself
            raise field_error(where, "the NAME of an environment variable", file=source)
        raise field_error(where, "the NAME of an environment variable", file=source, got=value)
    return value


def _provider(raw: object, source: str) -> Exec | None:
    """config.json's ``provider``: its program resolved like a manifest entry's, relative to the file's folder.

    ``api_key_env`` is the one exception to the worker environment allow-list: that variable (and
    no other credential) reaches the provider's process, under its own name.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise field_error("provider", "an object with exec, optional cwd and api_key_env", file=source, got=raw)
    reject_unknown(raw, _PROVIDER_FIELDS, file=source, at="provider")
    key_env = _env_name(raw.get("api_key_env"), "provider.api_key_env", source)
    spec = parse_exec(raw, Path(source).absolute().parent, f"{source}: provider")
    return replace(spec, env=(key_env,)) if key_env else spec


def parse_api_config(raw: dict[str, Any], source: str = "config.json") -> ApiConfig:
    """Validate a config.json object; every problem is a ConfigError naming the field."""
    try:
        return _parse(raw, source)
    except SettingsError as exc:
        raise ConfigError(str(exc)) from None


def _parse(raw: dict[str, Any], file: str) -> ApiConfig:
    _refuse_credentials(raw, file)
    reject_unknown(raw, _TOP_FIELDS, file=file)
    protocol = raw.get("protocol", "openai")
    if not isinstance(protocol, str) or not protocol.strip():
        expected = f"one of {', '.join(PROTOCOLS)} (or, with a provider worker, any non-empty string)"
        raise field_error("protocol", expected, file=file, got=protocol)
    base_url = raw.get("base_url")
    parts = urlsplit(base_url) if isinstance(base_url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
        raise field_error("base_url", "an http(s) URL such as http://127.0.0.1:8080/v1", file=file, got=base_url)
    if parts.username or parts.password:
        raise ConfigError(f"{file}: base_url must not contain credentials: {_NO_CREDENTIALS}")
    model = require_str(raw, "model", file=file)
    if not model.strip():
        raise field_error("model", "a non-empty string", file=file)
    extra_body = optional_object(raw, "extra_body", {}, file=file)
    reserved = sorted(set(extra_body) & RESERVED_FIELDS)
    if reserved:
        raise ConfigError(f"{file}: extra_body may not override reserved field(s): {', '.join(reserved)}")
    assert isinstance(base_url, str)  # checked above, with the scheme and host
    return ApiConfig(
        protocol=protocol,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env=_env_name(raw.get("api_key_env"), "api_key_env", file),
        max_tokens=optional_int(raw, "max_tokens", 4096, file=file, minimum=1, maximum=10_000_000),
        use_max_tokens=optional_bool(raw, "use_max_tokens", False, file=file),
        io_limit_bytes=optional_int(
            raw, "io_limit_bytes", 1024 * 1024, file=file, minimum=1024, maximum=64 * 1024 * 1024
        ),
        budget=_budget(raw, file),
        extra_body=extra_body,
        stream=optional_bool(raw, "stream", True, file=file),
        timeout=optional_number(raw, "timeout", 600.0, file=file, minimum=1, maximum=3600),
        retries=optional_int(raw, "retries", 3, file=file, minimum=0, maximum=10),
        source=file,
        archive_max_bytes=optional_int(
            raw, "archive_max_bytes", DEFAULT_ARCHIVE_MAX_BYTES, file=file, minimum=1024, maximum=1 << 40
        ),
        provider=_provider(raw.get("provider"), file),
        omit_fields=_omit_fields(raw, file),
        prices=parse_prices(raw.get("prices"), file),
        models=_models(raw, file),
        prepare=optional_choice(raw, "prepare", ("auto", "off"), "auto", file=file),
    )


def _models(raw: dict[str, Any], source: str) -> dict[str, ApiConfig]:
    """``models``: ``{NAME: {fields}}``, each entry the top level with its fields over it (``budget``
    merged key by key; ``model`` defaults to NAME; ``prices`` carried over only for the same model),
    validated as a whole config.json is."""
    entries = raw.get("models", {})
    if not isinstance(entries, dict):
        raise ConfigError(f"{source}: models must be an object of NAME: {{model, protocol, budget, prices, ...}}")
    # The provider is the top level's, resolved against config.json's folder (not re-read per entry).
    base = {key: value for key, value in raw.items() if key not in ("models", "provider")}
    provider = _provider(raw.get("provider"), source) if entries else None
    result: dict[str, ApiConfig] = {}
    for name, entry in entries.items():
        where = f"{source}: models.{name}"
        if not 1 <= len(name) <= 128 or any(c.isspace() for c in name):
            raise ConfigError(f"{source}: models: {name!r} is not a name (1-128 characters, no spaces)")
        if not isinstance(entry, dict):
            raise ConfigError(f"{where} must be an object of config.json fields")
        unknown = sorted(set(entry) - _MODEL_ENTRY_FIELDS)
        if unknown:
            raise ConfigError(
                f"{where}: field(s) {', '.join(unknown)} cannot be set per model; "
                f"known: {', '.join(sorted(_MODEL_ENTRY_FIELDS))}"
            )
        merged = {**base, "model": name, **entry}
        if isinstance(base.get("budget"), dict) and isinstance(entry.get("budget"), dict):
            merged["budget"] = {**base["budget"], **entry["budget"]}
        if "prices" not in entry and merged["model"] != base.get("model"):
            merged.pop("prices", None)  # another model's prices would be wrong
        result[name] = replace(parse_api_config(merged, where), provider=provider)
    return result


def _omit_fields(raw: dict[str, Any], file: str) -> tuple[str, ...]:
    value = raw.get("omit_fields", [])
    if not isinstance(value, list) or any(name not in OMITTABLE for name in value):
        raise field_error(
            "omit_fields", f"a list of request fields to leave out, of: {', '.join(OMITTABLE)}", file=file
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
