"""A failure of this worker, recorded where ``after_compact_commit`` finds it; the config, read."""

from __future__ import annotations

from typing import Any, TypeGuard

from i_protocol import ProtocolError, Request

from . import diagnostics as diag
from .settings import CompactConfig, parse_config
from .state import CompactState


def count(value: Any) -> TypeGuard[int]:
    """``value`` is a non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def fail(request: Request, state: CompactState | None, reason: str, message: str) -> None:
    """Record a failure of this worker: in ``state`` and, for ``after_compact_commit``, on disk."""
    record = diag.attempt(
        diag.FAILED,
        reason,
        event=request.event,
        error=message,
        attempt=state.attempt if state is not None else None,
    )
    if state is not None:
        state.last_attempt = record
    diag.record_failure(request, record)


def load_config(request: Request, state: CompactState | None = None) -> CompactConfig:
    """This worker's ``compact.json``; an invalid one is recorded as a failure and raised."""
    try:
        return parse_config(request.config())
    except ProtocolError as exc:  # a SettingsError / ConfigError keeps its kind ``config``
        fail(request, state, "invalid_config", str(exc))
        raise
