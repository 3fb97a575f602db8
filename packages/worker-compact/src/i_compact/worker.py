"""The compact worker: handler registration for ``compact_plan``, ``before_compact``,
``after_compact`` and ``after_compact_commit``; each route lives in :mod:`i_compact.routes`."""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from typing import Any

from i_protocol import Request, Worker

from . import diagnostics as diag
from . import request_memory
from .__about__ import __version__
from .settings import check_config

worker = Worker("compact", __version__, dist_name="i-worker-compact")
# Declared in `hello` (SPEC §3.4); set as an attribute so an older i-protocol only ignores it.
worker.extensions = (
    "after_compact_commit",
    "after_compact_rounds",
    "chunks",
    "cut_estimates",
    "focus",
    "prepared",
    "previous_attempt",
    "summary_request_overhead",
)

if hasattr(worker, "config_check"):  # an older i-protocol has no config checks: compact.json is read later
    worker.config_check()(check_config)

Handler = Callable[[dict[str, Any], Request], dict[str, Any]]


def _per_request(handler: Handler) -> Handler:
    """Run ``handler`` with the cyclic garbage collector paused, and drop what the request kept.

    Planning and summarising a long history allocate tens of thousands of short-lived,
    acyclic objects; the collector would run dozens of times per request and find nothing
    (about 6% of a 10,000-message local compaction). Reference counting still frees them.
    What one request remembers (names per run, redactions, the analysis of its messages) is
    forgotten after it, so no request's time depends on an earlier one and no history stays alive.
    """

    @functools.wraps(handler)
    def run(data: dict[str, Any], request: Request) -> dict[str, Any]:
        collecting = gc.isenabled()
        gc.disable()
        try:
            return handler(data, request)
        finally:
            request_memory.forget()
            if collecting:
                gc.enable()

    return run


@worker.hook("compact_plan")
@_per_request
def compact_plan(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Choose ``cut`` (or decline with ``reason``) and return the opaque ``state``."""
    from .routes.plan import compact_plan as plan

    return plan(data, request, worker.version_line())


@worker.hook("before_compact")
@_per_request
def before_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Return ``prompt`` + prepared ``messages`` (model mode) or a local ``summary``."""
    from .routes.before import before_compact as prepare

    return prepare(data, request, worker.version_line())


@worker.hook("after_compact")
@_per_request
def after_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Normalize ``summary`` to one canonical block, checked against the ledger; an empty or
    non-string one fails.

    With a ledger in ``state`` (this worker's ``before_compact``), a model summary that leaves
    out a ledger fact gets one further request naming what is missing (``request``); what is
    still missing is carried forward, and the state record is appended verbatim. Nothing is
    committed by this step: the core decides and reports it in ``after_compact_commit``.
    """
    from .routes.after import after_compact as normalize

    return normalize(data, request, worker.version_line())


@worker.hook("after_compact_commit")
def after_compact_commit(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Write the attempt's final record (``last-attempt.json`` + history); data comes back as is."""
    from .routes.commit import final_attempt

    diag.persist_final(request, final_attempt(data, request))
    return dict(data)
