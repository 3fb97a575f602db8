"""The checkpoint module's invariants (SPEC §3.4 ``turn_context`` and ``undo``): it declares both in
``hello``; a write recorded around ``before_tool`` / ``after_tool`` is listed by a dry run and undone
byte for byte; a file changed since is a conflict, kept; a second undo of the turn is refused; bad
``undo`` data is an error frame; tool events without session and turn pass unchanged."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from i_protocol.checkpoint import UndoRequest

from ..hook_results import CHECKS
from .probe import CheckFailed, Probe, Run, expect_error

_SESSION = "check-session"


def _workspace(run: Run) -> Path:
    root = Path(run.site.workspace)
    (root / ".git").mkdir(exist_ok=True)  # a work tree (git itself is never run)
    return root


def _write(probe: Probe, turn: int, call: str, path: Path, content: bytes) -> dict[str, Any]:
    """One recorded ``write`` of ``path``: before_tool, the write, after_tool; the before_tool answer."""
    arguments = orjson.dumps({"path": path.name, "content": "x"}).decode()
    sent = {"name": "write", "arguments": arguments, "id": call, "session": _SESSION, "turn": turn}
    answer = probe.call("before_tool", sent)
    CHECKS["before_tool"](answer, sent)
    path.write_bytes(content)
    probe.call("after_tool", {"name": "write", "id": call, "output": "ok", "session": _SESSION, "turn": turn})
    return answer


def _undo(probe: Probe, turn: int, dry_run: bool) -> Any:
    sent = UndoRequest(_SESSION, turn, dry_run).as_json()
    return CHECKS["undo"](probe.call("undo", sent), sent)


def declares(run: Run) -> str:
    """``hello`` declares ``turn_context`` and ``undo``."""
    with run.probe() as probe:
        answer = probe.call("hello", {"package": "i-core", "version": "0", "protocol": "1", "extensions": []})
    extensions = answer.get("extensions") if isinstance(answer, dict) else None
    missing = {"turn_context", "undo"} - set(extensions if isinstance(extensions, list) else [])
    if missing:
        raise CheckFailed(f"hello does not declare {', '.join(sorted(missing))}; the core would never send them")
    return "turn_context and undo declared"


def round_trip(run: Run) -> str:
    """A recorded write: the dry run lists it and changes nothing; the undo restores bytes and mode."""
    root = _workspace(run)
    target = root / "kept.txt"
    target.write_bytes(b"before\n")
    os.chmod(target, 0o640)
    with run.probe() as probe:
        _write(probe, 1, "c1", target, b"after\n")
        plan = _undo(probe, 1, True)
        listed = {item.path: item.status for item in plan.files}
        if listed.get("kept.txt") != "restore":
            raise CheckFailed(f"the dry run does not list kept.txt to restore: {listed}")
        if target.read_bytes() != b"after\n":
            raise CheckFailed("the dry run changed the file")
        done = _undo(probe, 1, False)
    if not done.applied or target.read_bytes() != b"before\n" or (target.stat().st_mode & 0o777) != 0o640:
        raise CheckFailed("the undo did not put back the file's bytes and mode")
    return "dry run listed, undo restored bytes and mode"


def conflicts(run: Run) -> str:
    """A file changed after the turn is a conflict and kept; undoing the turn again is refused."""
    root = _workspace(run)
    target = root / "mine.txt"
    target.write_bytes(b"one")
    with run.probe() as probe:
        _write(probe, 2, "c2", target, b"two")
        target.write_bytes(b"the user's")
        done = _undo(probe, 2, False)
        status = {item.path: item.status for item in done.files}.get("mine.txt")
        if status != "conflict" or target.read_bytes() != b"the user's":
            raise CheckFailed(f"a file changed since the turn was {status}, not kept as a conflict")
        again = expect_error(probe, "undo", UndoRequest(_SESSION, 2, True).as_json(), "a turn undone already")
    return f"conflict kept; second undo refused ({again[:50]})"


def error_rules(run: Run) -> str:
    """Bad ``undo`` data is an error frame; tool events without turn context pass unchanged."""
    with run.probe() as probe:
        expect_error(probe, "undo", {"session": _SESSION, "turn": 0, "dry_run": True}, "turn 0")
        sent = {"name": "write", "arguments": '{"path": "x"}', "id": "c9"}
        if probe.call("before_tool", sent) != sent:
            raise CheckFailed("before_tool without session and turn was not returned unchanged")
    return "bad undo data refused; tool events without turn context unchanged"


CHECKS_OF_MODULE = (
    ("hello: turn_context and undo", declares),
    ("undo: round trip", round_trip),
    ("undo: conflicts and no redo", conflicts),
    ("undo: error rules", error_rules),
)
