"""The checkpoint worker: ``before_tool`` / ``after_tool`` record each turn, ``undo`` takes it back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from i_protocol import Paths, ProtocolError, Request, Worker, WorkerConfig
from i_protocol.checkpoint import TURN_CONTEXT, UNDO, UNDO_EVENT, turn_context, undo_request

from . import recorder
from .__about__ import __version__
from .errors import CheckpointError
from .settings import Settings, parse_settings
from .store import SessionStore, prune
from .undo import undo

worker = Worker("checkpoint", __version__, dist_name="i-worker-checkpoint", extensions=(TURN_CONTEXT, UNDO))

_pending: dict[tuple[str, str], recorder.Pending] = {}
"""Per (session, call id): what ``before_tool`` kept for ``after_tool`` (one process serves one run)."""
_pruned: set[str] = set()
_stores: dict[tuple[str, str], SessionStore] = {}
"""One store object per (state folder, session) for the process: its size and stat cache stay in memory."""


def store_for(state_dir: Path, session: str) -> SessionStore:
    """The session's store (kept for the process)."""
    key = (str(state_dir), session)
    found = _stores.get(key)
    if found is None:
        found = _stores[key] = SessionStore(state_dir, session)
    return found


def settings_for(request: Request) -> Settings:
    """``--config FILE`` or ``config_dir/checkpoint.json`` (defaults when absent)."""
    config = request.config()
    return parse_settings(config.data, config.path or "checkpoint.json")


def check_config(config: WorkerConfig, paths: Paths) -> None:
    """The config check (``i-checkpoint --check-config``, each first request): checkpoint.json's fields."""
    parse_settings(config.data, config.path or "checkpoint.json")


if hasattr(
    worker, "config_check"
):  # an older i-protocol has no config checks: checkpoint.json is read at its first use
    worker.config_check()(check_config)


def _root(request: Request) -> Path:
    if request.workspace is None:
        raise CheckpointError("the request has no workspace: nothing to record or restore")
    return Path(request.workspace)


@worker.hook("before_tool")
def before_tool(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Keep what the call may change; ``notice`` says before it runs when it will not be undoable."""
    where = turn_context(data)
    name, arguments, call = data.get("name"), data.get("arguments"), data.get("id")
    if where is None or not isinstance(name, str) or not isinstance(arguments, str) or not isinstance(call, str):
        return data  # a host without turn_context: nothing is keyed, nothing recorded
    settings = settings_for(request)
    state_dir = request.state_dir()
    if str(state_dir) not in _pruned:
        _pruned.add(str(state_dir))
        prune(state_dir, settings.keep_days, keep=where.session)
    store = store_for(state_dir, where.session)
    pending, notice = recorder.before(name, arguments, _root(request), store, where.turn, settings)
    if pending is not None:
        _pending[(where.session, call)] = pending
    return {**data, "notice": notice} if notice else data


@worker.hook("after_tool")
def after_tool(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Record what the call changed."""
    where = turn_context(data)
    call = data.get("id")
    if where is None or not isinstance(call, str):
        return data
    pending = _pending.pop((where.session, call), None)
    if pending is not None:
        recorder.after(pending, settings_for(request))
    return data


@worker.hook(UNDO_EVENT)
def undo_event(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Plan or apply the undo of a turn (and every later one) of a session."""
    try:
        sent = undo_request(data)
    except ProtocolError as exc:
        raise CheckpointError(str(exc)) from None
    store = store_for(request.state_dir(), sent.session)
    return {**data, **undo(sent, _root(request), store).as_json()}
