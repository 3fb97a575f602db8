"""The cache worker: its handlers registered on one i_protocol.Worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from i_protocol import Paths, Request, Worker, WorkerConfig

from .__about__ import __version__
from .fingerprint import PrefixTracker
from .observe import record_response, record_retry
from .prepare import prepare_request
from .settings import SMOKE_SETTINGS, CacheSettings, parse_settings

worker = Worker("cache", __version__, dist_name="i-worker-cache")
# The worker process's memory of each stream's previous prefix: what makes an append cheap.
_tracker = PrefixTracker()
_smoke = False  # `i-cache smoke`: the smoke profiles' settings, cache.json unread


@worker.command("smoke")
def smoke_command(argv: list[str]) -> int:
    """``i-cache smoke [--config FILE]``: serve in observe mode with statistics in
    metrics/smoke-cache.json, whatever cache.json says (the smoke profiles run it so)."""
    global _smoke
    _smoke = True
    return worker.main(argv)


def settings_for(request: Request) -> CacheSettings:
    """The validated ``cache.json`` of this request's config directory (or ``--config``)."""
    if _smoke:
        return SMOKE_SETTINGS
    config = request.config()
    return parse_settings(config.data, config.path or "cache.json")


def check_config(config: WorkerConfig, paths: Paths) -> str | None:
    """The config check (``i-cache --check-config``, each first request): cache.json's fields."""
    if _smoke:
        return "cache.json unread (the smoke profiles' settings)"
    parse_settings(config.data, config.path or "cache.json")
    return None


if hasattr(worker, "config_check"):  # an older i-protocol has none: the config is read at its first use
    worker.config_check()(check_config)


def _stats_path(request: Request, settings: CacheSettings) -> Path:
    return request.state_dir() / settings.stats


@worker.hook("before_request")
def before_request(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Add the mode's cache fields, classify the prefix and record the preparation (the answer
    checked as the core reads it: ``i_protocol.events``)."""
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    settings = settings_for(request)
    if not settings.enabled:
        return data
    workspace_id = request.workspace_id()
    prepared = prepare_request(data, settings, workspace_id, _stats_path(request, settings), _tracker)
    return to_json("before_request", prepared, data)


@worker.hook("request_retry")
def request_retry(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Count the extra preparation of a retried request."""
    settings = settings_for(request)
    if not settings.enabled:
        return data
    return record_retry(data, _stats_path(request, settings))


@worker.hook("after_response")
def after_response(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Record the response's usage per provider rules (unknown is never 0)."""
    settings = settings_for(request)
    if not settings.enabled:
        return data
    return record_response(data, _stats_path(request, settings))


@worker.command("report")
def report_command(argv: list[str]) -> int:
    """``i-cache report -C PROJECT [--config FILE] [--json]``."""
    from .cli import run_report  # argparse: only for the command, never on the serve path

    return run_report(argv)
