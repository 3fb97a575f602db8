"""The checkpoint contract (SPEC §3.4): session and turn on tool events, and the ``undo`` event.

A worker that declares the ``turn_context`` extension in its ``hello`` answer receives, on
``before_tool`` and ``after_tool``, the session id and the turn number the call belongs to::

    {"id":7,"event":"before_tool","workspace":"/p","data":{"name":"shell","arguments":"{\\"command\\":\\"make\\"}",
     "id":"call_1","session":"5f0c…","turn":3}}

Its ``before_tool`` answer may carry ``notice`` (one line the host shows the user before the
call runs, e.g. that this call will not be undoable). A worker that declares ``undo`` answers the
``undo`` event ``{session, turn, dry_run}``: the state before ``turn`` (and every later turn of the
session) is what it restores, file by file::

    {"id":9,"event":"undo","workspace":"/p","data":{"session":"5f0c…","turn":3,"dry_run":true}}
    {"id":9,"data":{"session":"5f0c…","turn":3,"dry_run":true,"turns":[3,4],"applied":false,
      "files":[{"path":"src/a.py","status":"restore","before":{"kind":"file","sha256":"…","mode":420},
                "after":{"kind":"file","sha256":"…","mode":420},"current":{"kind":"file","sha256":"…","mode":420}}],
      "not_undoable":["turn 4: shell outside a git work tree: its effects are not recorded"]}}

``status`` is ``restore`` (dry run: it would be restored), ``restored``, ``conflict`` (the file
changed since the turn: kept as it is) or ``refused`` (with ``reason``). A file state is
``{"kind":"absent"}``, ``{"kind":"file","sha256","mode"}``, ``{"kind":"symlink","target"}`` or
``{"kind":"dir","mode"}``. Types here; the worker is i-worker-checkpoint, the host i-core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, TypeGuard

from .errors import ProtocolError

UNDO_EVENT = "undo"
TURN_CONTEXT = "turn_context"
"""The extension name under which ``before_tool`` / ``after_tool`` carry ``session`` and ``turn``."""
UNDO = "undo"
"""The extension name of the ``undo`` event."""
STATUSES = ("restore", "restored", "conflict", "refused")
KINDS = ("absent", "file", "symlink", "dir")


@dataclass(frozen=True)
class TurnContext:
    """Which session and turn a tool call belongs to."""

    session: str
    turn: int

    def as_json(self) -> dict[str, Any]:
        """The fields added to the tool event's data."""
        return {"session": self.session, "turn": self.turn}


def turn_context(data: dict[str, Any]) -> TurnContext | None:
    """The ``session`` / ``turn`` of a tool event's data; None when the host sent none (or bad ones)."""
    session, turn = data.get("session"), data.get("turn")
    if _session_ok(session) and _turn_ok(turn):
        return TurnContext(session, turn)
    return None


@dataclass(frozen=True)
class UndoRequest:
    """The ``undo`` event's data."""

    session: str
    turn: int
    dry_run: bool = True

    def as_json(self) -> dict[str, Any]:
        """The event's data on the wire."""
        return {"session": self.session, "turn": self.turn, "dry_run": self.dry_run}


def undo_request(data: dict[str, Any]) -> UndoRequest:
    """The checked ``undo`` data; a ``ProtocolError`` naming the bad field."""
    session, turn, dry_run = data.get("session"), data.get("turn"), data.get("dry_run", True)
    if not _session_ok(session):
        raise ProtocolError("undo: data.session must be 1-128 characters of A-Z a-z 0-9 _ . -")
    if not _turn_ok(turn):
        raise ProtocolError(f"undo: data.turn must be a positive integer, got {turn!r}")
    if not isinstance(dry_run, bool):
        raise ProtocolError(f"undo: data.dry_run must be true or false, got {dry_run!r}")
    return UndoRequest(session, turn, dry_run)


@dataclass(frozen=True)
class UndoFile:
    """One path of an undo: what it was before the turn, what the turn left, what it is now."""

    path: str
    status: str
    before: dict[str, Any]
    after: dict[str, Any]
    current: dict[str, Any]
    reason: str = ""

    def as_json(self) -> dict[str, Any]:
        """The wire form (``reason`` only when there is one)."""
        found = {"path": self.path, "status": self.status, "before": self.before, "after": self.after}
        found["current"] = self.current
        return {**found, "reason": self.reason} if self.reason else found


@dataclass(frozen=True)
class UndoAnswer:
    """The ``undo`` answer: the files, and what the turns did that no undo can take back."""

    session: str
    turn: int
    dry_run: bool
    turns: tuple[int, ...] = ()
    files: tuple[UndoFile, ...] = ()
    not_undoable: tuple[str, ...] = ()
    applied: bool = False
    extra: dict[str, Any] = field(default_factory=dict)

    def as_json(self) -> dict[str, Any]:
        """The wire form."""
        return {
            **self.extra,
            "session": self.session,
            "turn": self.turn,
            "dry_run": self.dry_run,
            "turns": list(self.turns),
            "files": [item.as_json() for item in self.files],
            "not_undoable": list(self.not_undoable),
            "applied": self.applied,
        }

    def with_status(self, status: str) -> tuple[UndoFile, ...]:
        """The files of one ``status``."""
        return tuple(item for item in self.files if item.status == status)


def undo_answer(answer: Any, sent: UndoRequest) -> UndoAnswer:
    """The checked answer of a worker to ``sent``; a ``ProtocolError`` naming what is wrong.

    The data returned unchanged (a worker that does not know ``undo``) is an error: nothing was done.
    """
    if not isinstance(answer, dict) or "files" not in answer:
        raise ProtocolError("answered undo without files: it does not implement the undo event")
    if answer.get("session") != sent.session or answer.get("turn") != sent.turn:
        raise ProtocolError("answered undo for another session or turn")
    turns, files, notes = answer.get("turns", []), answer.get("files"), answer.get("not_undoable", [])
    if not isinstance(turns, list) or not all(_turn_ok(turn) for turn in turns):
        raise ProtocolError("answered undo with turns that are not a list of positive integers")
    if not isinstance(notes, list) or not all(isinstance(note, str) for note in notes):
        raise ProtocolError("answered undo with not_undoable that is not a list of strings")
    if not isinstance(files, list):
        raise ProtocolError("answered undo with files that are not a list")
    applied = answer.get("applied", False)
    if not isinstance(applied, bool):
        raise ProtocolError("answered undo with applied that is not true or false")
    return UndoAnswer(
        sent.session,
        sent.turn,
        sent.dry_run,
        tuple(turns),
        tuple(_undo_file(item, index) for index, item in enumerate(files)),
        tuple(notes),
        applied,
    )


def _undo_file(item: Any, index: int) -> UndoFile:
    where = f"files[{index}]"
    if not isinstance(item, dict) or not isinstance(item.get("path"), str) or not item["path"]:
        raise ProtocolError(f"answered undo with {where} that has no path")
    status = item.get("status")
    if status not in STATUSES:
        raise ProtocolError(f"answered undo with {where}.status {status!r}, not one of {', '.join(STATUSES)}")
    states = []
    for name in ("before", "after", "current"):
        state = item.get(name, {"kind": "absent"})
        if not isinstance(state, dict) or state.get("kind") not in KINDS:
            raise ProtocolError(f"answered undo with {where}.{name} that is no file state")
        states.append(state)
    reason = item.get("reason", "")
    before, after, current = states
    return UndoFile(item["path"], status, before, after, current, reason if isinstance(reason, str) else "")


def _session_ok(value: Any) -> TypeGuard[str]:
    return (
        isinstance(value, str)
        and 0 < len(value) <= 128
        and all(c.isascii() and (c.isalnum() or c in "_.-") for c in value)
        and value not in (".", "..")
    )


def _turn_ok(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


__all__ = [
    "KINDS",
    "STATUSES",
    "TURN_CONTEXT",
    "UNDO",
    "UNDO_EVENT",
    "TurnContext",
    "UndoAnswer",
    "UndoFile",
    "UndoRequest",
    "turn_context",
    "undo_answer",
    "undo_request",
]
