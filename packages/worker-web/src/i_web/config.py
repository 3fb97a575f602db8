"""web.json: the trusted private hosts and the search endpoint, validated into typed settings."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from i_protocol import WorkerConfig

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
            with open(self.credentials_file, "rb") as handle:
                raw = handle.read(MAX_CREDENTIALS_BYTES + 1)
        except OSError as exc:
            raise WebError(
                f"web.json search.credentials_file {self.credentials_file}: cannot read: {exc.strerror or exc}"
            ) from None
        if len(raw) > MAX_CREDENTIALS_BYTES:
            raise WebError(
                f"web.json search.credentials_file {self.credentials_file}: larger than {MAX_CREDENTIALS_BYTES} bytes"
            )
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
    data = config.data
    source = config.path or "web.json"
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise WebError(f"{source}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_TOP_KEYS))}")
    policy = AddressPolicy.from_entries(data.get("allow_private"), f"{source}: allow_private")
    user_agent = data.get("user_agent", _DEFAULT_USER_AGENT)
    if not isinstance(user_agent, str) or not user_agent.strip() or any(c in user_agent for c in "\r\n"):
        raise WebError(f"{source}: user_agent must be a one-line string")
    search_data = data.get("search")
    search = None if search_data is None else _search_settings(search_data, config, source)
    return WebSettings(policy, search, user_agent.replace("{version}", version), source)


def _search_settings(data: Any, config: WorkerConfig, source: str) -> SearchSettings:
    where = f"{source}: search"
    if not isinstance(data, dict):
        raise WebError(f"{where} must be an object")
    unknown = sorted(set(data) - _SEARCH_KEYS)
    if unknown:
        raise WebError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_SEARCH_KEYS))}")
    url = data.get("url")
    if not isinstance(url, str) or not url.lower().startswith(("http://", "https://")):
        raise WebError(f"{where}.url must be an absolute http:// or https:// URL")
    method = str(data.get("method", "GET")).upper()
    if method not in ("GET", "POST"):
        raise WebError(f"{where}.method must be GET or POST, got {data.get('method')!r}")
    query_param = _string(data.get("query_param", "q"), f"{where}.query_param")
    count_param = data.get("count_param")
    if count_param is not None:
        count_param = _string(count_param, f"{where}.count_param")
    params = _string_map(data.get("params", {}), f"{where}.params")
    headers = _string_map(data.get("headers", {}), f"{where}.headers")
    body = data.get("body")
    if body is not None and method != "POST":
        raise WebError(f"{where}.body is only used with method POST")
    results = _result_mapping(data.get("results", {}), f"{where}.results")
    credentials_file = data.get("credentials_file")
    if credentials_file is not None:
        credentials_file = os.path.abspath(config.resolve(_string(credentials_file, f"{where}.credentials_file")))
    header_name, prefix = _credentials_header(data.get("credentials_header"), f"{where}.credentials_header")
    return SearchSettings(
        url=url,
        method=method,
        query_param=query_param,
        count_param=count_param,
        params=params,
        body=body,
        headers=headers,
        results=results,
        credentials_file=credentials_file,
        credentials_header=header_name,
        credentials_prefix=prefix,
    )


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise WebError(f"{where} must be a non-empty string")
    return value


def _string_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise WebError(f"{where} must be an object of strings")
    out: dict[str, str] = {}
    for key, item in value.items():
        if isinstance(item, bool) or not isinstance(item, str | int | float):
            raise WebError(f"{where}.{key} must be a string or number")
        text = str(item)
        if any(c in text or c in key for c in "\r\n"):
            raise WebError(f"{where}.{key} must be on one line")
        out[key] = text
    return out


def _result_mapping(value: Any, where: str) -> ResultMapping:
    if not isinstance(value, dict):
        raise WebError(f"{where} must be an object with path, title, url, snippet")
    unknown = sorted(set(value) - _RESULT_KEYS)
    if unknown:
        raise WebError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(_RESULT_KEYS))}")
    for key, item in value.items():
        if not isinstance(item, str):
            raise WebError(f"{where}.{key} must be a string (a dotted JSON path)")
    return ResultMapping(**value)


def _credentials_header(value: Any, where: str) -> tuple[str, str]:
    if value is None:
        return "Authorization", "Bearer "
    if not isinstance(value, dict) or set(value) - {"header", "prefix"}:
        raise WebError(f'{where} must be {{"header": NAME, "prefix": TEXT}}')
    header = value.get("header", "Authorization")
    prefix = value.get("prefix", "")
    if not isinstance(header, str) or not header or any(c in header for c in ":\r\n "):
        raise WebError(f"{where}.header must be an HTTP header name")
    if not isinstance(prefix, str) or any(c in prefix for c in "\r\n"):
        raise WebError(f"{where}.prefix must be a one-line string")
    return header, prefix
