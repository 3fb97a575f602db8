"""The web worker: its handlers registered on one i_protocol.Worker."""

from __future__ import annotations

import sys
from typing import Any

from i_protocol import Paths, Request, Worker, WorkerConfig

from .__about__ import __version__
from .errors import WebError
from .settings import WebSettings, load_settings

worker = Worker("web", __version__, dist_name="i-worker-web")


def _settings(request: Request) -> WebSettings:
    return load_settings(request.config(), __version__)


def check_config(config: WorkerConfig, paths: Paths) -> None:
    """The config check (``i-web --check-config``, each first request): web.json's fields."""
    load_settings(config, __version__)


if hasattr(worker, "config_check"):  # an older i-protocol has none: the config is read at its first use
    worker.config_check()(check_config)


@worker.tool("web_fetch")
def web_fetch(arguments: dict[str, Any], request: Request) -> str:
    """Fetch one public URL and return its text framed as untrusted content."""
    from .fetch import fetch, parse_fetch_arguments

    url, max_chars = parse_fetch_arguments(arguments)
    settings = _settings(request)
    return fetch(url, max_chars, settings.policy, settings.user_agent)


@worker.tool("web_search")
def web_search(arguments: dict[str, Any], request: Request) -> str:
    """Query the configured search endpoint and return title/URL/snippet results."""
    from .search import parse_search_arguments, search

    query, count = parse_search_arguments(arguments)
    settings = _settings(request)
    if settings.search is None:
        raise WebError(
            f'web_search is not configured: add a "search" section to {settings.source} '
            "(see examples/web.config.json in the i-worker-web package)"
        )
    return search(query, count, settings.search, settings.policy, settings.user_agent)


@worker.command("schemas")
def print_schemas(argv: list[str]) -> int:
    """``i-web schemas``: print the model-facing tool schemas as JSON."""
    import orjson

    from .schemas import TOOLS

    if argv:
        print("usage: i-web schemas", file=sys.stderr)
        return 2
    sys.stdout.write(orjson.dumps(TOOLS, option=orjson.OPT_INDENT_2).decode() + "\n")
    return 0
