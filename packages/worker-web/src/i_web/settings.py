"""web.json: the trusted private hosts and the search endpoint, validated into typed settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from i_protocol import WorkerConfig
from i_protocol.errors import FileTooLarge, SettingsError
from i_protocol.files import read_bytes
from i_protocol.settings import field_error, optional_object, optional_str, reject_unknown

from .address import AddressPolicy
from .errors import WebError

MAX_CREDENTIALS_BYTES = 64 * 1024
_TOP_KEYS = {"allow_private", "search", "user_agent"}
_SEARCH_KEYS = {
    "url",
    "method",
    "query_param",
    "count_param",
    "params",
    "body",
    "headers",
    "results",
    "credentials_file",
    "credentials_header",
}
_RESULT_KEYS = {"path", "title", "url", "snippet"}
_DEFAULT_USER_AGENT = "i-web/{version} (no JavaScript; +https://pypi.org/project/i-worker-web/)"


@dataclass(frozen=True)
class ResultMapping:
    """Where the result list and each result's fields sit in the search response JSON."""

    path: str = ""
    title: str = "title"
    url: str = "url"
    snippet: str = "snippet"


@dataclass(frozen=True)
class SearchSettings:
    """The configured search endpoint; the credential itself is read only when a search runs."""

    url: str
    method: str = "GET"
    query_param: str = "q"
    count_param: str | None = None
    params: dict[str, str] = field(default_factory=dict)
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    results: ResultMapping = field(default_factory=ResultMapping)
    credentials_file: str | None = None
    credentials_header: str = "Authorization"
    credentials_prefix: str = "Bearer "

    def read_credential(self) -> str | None:
        """The secret from ``credentials_file`` (stripped), or None when none is configured."""
        if self.credentials_file is None:
            return None
        try:
            raw = read_bytes(self.credentials_file, MAX_CREDENTIALS_BYTES)
        except OSError as exc:
            raise WebError(
                f"web.json search.credentials_file {self.credentials_file}: cannot read: {exc.strerror or exc}"
            ) from None
        except FileTooLarge:
            raise WebError(
                f"web.json search.credentials_file {self.credentials_file}: larger than {MAX_CREDENTIALS_BYTES} bytes"
            ) from None
        secret = raw.decode("utf-8", "replace").strip()
        if not secret or any(ch in secret for ch in "\r\n\0"):
            # The message must never include the file's content.
            raise WebError(f"web.json search.credentials_file {self.credentials_file}: must hold one non-empty line")
        return secret


@dataclass(frozen=True)
class WebSettings:
    """Everything web.json configures."""

    policy: AddressPolicy = field(default_factory=AddressPolicy)
    search: SearchSettings | None = None
    user_agent: str = _DEFAULT_USER_AGENT
    source: str = "web.json"


def load_settings(config: WorkerConfig, version: str) -> WebSettings:
    """Validate a loaded web.json into settings; every error names the offending field."""
    source = config.path or "web.json"
    try:
        return _settings(config, source, version)
    except SettingsError as exc:
        raise WebError(str(exc)) from exc


def _settings(config: WorkerConfig, source: str, version: str) -> WebSettings:
    data = config.data
    reject_unknown(data, _TOP_KEYS, file=source)
    policy = AddressPolicy.from_entries(data.get("allow_private"), f"{source}: allow_private")
    user_agent = optional_str(data, "user_agent", _DEFAULT_USER_AGENT, file=source, one_line=True)
    if not user_agent.strip():
        raise field_error("user_agent", "a non-empty one-line string", file=source)
    search_data = optional_object(data, "search", None, file=source)
    search = None if search_data is None else _search_settings(search_data, config, source)
    return WebSettings(policy, search, user_agent.replace("{version}", version), source)


def _search_settings(data: dict[str, Any], config: WorkerConfig, source: str) -> SearchSettings:
    at = "search"
    reject_unknown(data, _SEARCH_KEYS, file=source, at=at)
    url = data.get("url")
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        # Not echoed: a search URL may carry an API key.
        raise field_error("url", "an absolute http:// or https:// URL", file=source, at=at)
    method = optional_str(data, "method", "GET", file=source, at=at).upper()
    if method not in ("GET", "POST"):
        raise field_error("method", "GET or POST", file=source, at=at, got=data.get("method"))
    query_param = optional_str(data, "query_param", "q", file=source, at=at)
    count_param = optional_str(data, "count_param", None, file=source, at=at)
    params = _string_map(data, "params", source)
    headers = _string_map(data, "headers", source)
    body = data.get("body")
    if body is not None and method != "POST":
        raise WebError(f"{source}: {at}.body is only used with method POST")
    results = _result_mapping(data, source)
    credentials_file = optional_str(data, "credentials_file", None, file=source, at=at)
    header_name, prefix = _credentials_header(data, source)
    return SearchSettings(
        url=url,
        method=method,
        query_param=query_param,
        count_param=count_param,
        params=params,
        body=body,
        headers=headers,
        results=results,
        credentials_file=None if credentials_file is None else os.path.abspath(config.resolve(credentials_file)),
        credentials_header=header_name,
        credentials_prefix=prefix,
    )


def _string_map(search: dict[str, Any], key: str, source: str) -> dict[str, str]:
    """``search.params`` / ``search.headers``: one-line strings or numbers (values never echoed)."""
    at = f"search.{key}"
    out: dict[str, str] = {}
    for name, item in optional_object(search, key, {}, file=source, at="search").items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise field_error(name, "a string or number", file=source, at=at, got=item)
        text = str(item)
        if any(c in text or c in name for c in "\r\n"):
            raise field_error(name, "on one line", file=source, at=at)
        out[name] = text
    return out


def _result_mapping(search: dict[str, Any], source: str) -> ResultMapping:
    at = "search.results"
    value = optional_object(search, "results", {}, file=source, at="search")
    reject_unknown(value, _RESULT_KEYS, file=source, at=at)
    for key, item in value.items():
        if not isinstance(item, str):
            raise field_error(key, "a string (a dotted JSON path)", file=source, at=at, got=item)
    return ResultMapping(**value)


def _credentials_header(search: dict[str, Any], source: str) -> tuple[str, str]:
    value = optional_object(search, "credentials_header", None, file=source, at="search")
    if value is None:
        return "Authorization", "Bearer "
    at = "search.credentials_header"
    reject_unknown(value, ("header", "prefix"), file=source, at=at)
    header = optional_str(value, "header", "Authorization", file=source, at=at)
    if any(c in header for c in ":\r\n "):
        raise field_error("header", "an HTTP header name", file=source, at=at)
    prefix = optional_str(value, "prefix", "", file=source, at=at, min_chars=0, one_line=True)
    return header, prefix
