"""Undo a turn (console ``/undo``, ``i --runtime undo``): its files through the checkpoint module's
``undo`` event (SPEC §3.4), then the conversation back to before that turn.

Turns are numbered in the session's meta (``agent.TURN_COUNTER``, never reused) and the user message
that opened each carries its number (``agent.TURN_MARK``). Undoing turn N undoes N and every later
turn: the worker restores every file they changed that nobody changed since (a file changed since is
a conflict, kept as it is), then the history is cut before turn N's message and saved through the
save hooks. Refused, in one line each: no module declares ``undo`` (the conversation is never
rolled back alone), no such turn, a turn inside a compacted span (its messages are only a summary
now), a turn undone already (no redo).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from i_protocol.checkpoint import UNDO, UNDO_EVENT, UndoAnswer, UndoRequest

from .agent import SESSION_ID, TURN_COUNTER, TURN_MARK
from .checkpoints import Checkpoints
from .errors import HookResultError, UndoRefused
from .hook_results import CHECKS
from .hooks import HookRunner
from .manifest import HookEntry
from .pool import describe_worker
from .session import Session

UNDONE = "undone"
"""The session meta key listing ``[first, last]`` turn ranges already undone."""
NOT_SELECTED = (
    'undo needs the checkpoint module, which is not selected: set "profile": "checkpoint" (or "full") '
    "in plugins.json and pipx install i-worker-checkpoint, or bind a replacement in bindings.json; "
    "nothing was changed"
)


@dataclass(frozen=True)
class UndoPlan:
    """What an undo will do: the turn, where its message starts in the history, the worker's dry run."""

    turn: int
    index: int
    answer: UndoAnswer
    hook: HookEntry


def undo_worker(hooks: HookRunner) -> HookEntry:
    """The one hook that declared ``undo`` in its ``hello``; ``UndoRefused`` when there is none."""
    found = []
    subscribers = hooks.subscribers(UNDO_EVENT)
    for hook in subscribers:
        hooks.pool.greet(hook.exec, hook.module)
        handshakes = hooks.pool.handshakes
        if handshakes is not None and handshakes.declared(hook.exec, UNDO):
            found.append(hook)
    if not subscribers:
        raise UndoRefused(NOT_SELECTED)
    if not found:
        names = ", ".join(describe_worker(hook.exec, hook.module) for hook in subscribers)
        raise UndoRefused(
            f"undo: worker {names} did not declare the 'undo' extension in hello, so it cannot undo; "
            "bind a checkpoint worker that does in bindings.json; nothing was changed"
        )
    if len(found) > 1:
        names = ", ".join(describe_worker(hook.exec, hook.module) for hook in found)
        raise UndoRefused(f"undo: more than one worker declares it ({names}); select one checkpoint module")
    return found[0]


def marked_turns(history: list[dict[str, Any]]) -> list[int]:
    """The turn numbers whose opening user message is in ``history``, in order."""
    return [m[TURN_MARK] for m in history if m.get("role") == "user" and isinstance(m.get(TURN_MARK), int)]


def plan_undo(hooks: HookRunner, session: Session, history: list[dict[str, Any]], turn: int | None) -> UndoPlan:
    """Check that ``turn`` (default: the last one in the history) can be undone and ask the worker's dry run."""
    hook = undo_worker(hooks)
    session_id = session.meta.get(SESSION_ID)
    turns = marked_turns(history)
    if not isinstance(session_id, str) or (not turns and turn is None):
        raise UndoRefused(f"{session.path}: nothing to undo: no turn of this session is in its history")
    if turn is None:
        turn = turns[-1]
    if undone(session, turn):
        raise UndoRefused(f"turn {turn} was undone already; an undo cannot be undone (no redo)")
    index = next((i for i, m in enumerate(history) if m.get("role") == "user" and m.get(TURN_MARK) == turn), None)
    if index is None:
        last = session.meta.get(TURN_COUNTER)
        if not isinstance(last, int) or not 1 <= turn <= last:
            raise UndoRefused(f"{session.path}: no turn {turn} in this session (its turns: {_ranges(turns)})")
        raise UndoRefused(
            f"turn {turn} is inside a compacted span (its messages were replaced by a summary), so the "
            f"conversation cannot return to before it; undo refused, nothing changed (turns that can be "
            f"undone: {_ranges(turns) or 'none'})"
        )
    answer = hooks.pool.call(
        hook.exec, UNDO_EVENT, UndoRequest(session_id, turn, True).as_json(), hooks.context, module=hook.module
    )
    return UndoPlan(turn, index, _checked(answer, UndoRequest(session_id, turn, True), hook), hook)


def apply_undo(
    hooks: HookRunner, checkpoints: Checkpoints, history: list[dict[str, Any]], plan: UndoPlan
) -> tuple[UndoAnswer, list[dict[str, Any]]]:
    """Restore the files (the worker), then save the history cut before the turn; (answer, new history)."""
    session = checkpoints.session
    request = UndoRequest(plan.answer.session, plan.turn, False)
    answer = _checked(
        hooks.pool.call(plan.hook.exec, UNDO_EVENT, request.as_json(), hooks.context, module=plan.hook.module),
        request,
        plan.hook,
    )
    last = session.meta.get(TURN_COUNTER)
    ranges = [r for r in session.meta.get(UNDONE, []) if isinstance(r, list)]
    session.meta[UNDONE] = [*ranges, [plan.turn, last if isinstance(last, int) else plan.turn]]
    kept = history[: plan.index]
    checkpoints.save(kept)
    return answer, kept


def undone(session: Session, turn: int) -> bool:
    """True when ``turn`` of ``session`` was undone already."""
    for item in session.meta.get(UNDONE, []):
        ok = isinstance(item, list) and len(item) == 2 and all(isinstance(n, int) for n in item)
        if ok and item[0] <= turn <= item[1]:
            return True
    return False


def describe(answer: UndoAnswer, done: bool) -> list[str]:
    """What an undo will do or did, one line each (untrusted paths: print through the sanitiser)."""
    turns = ", ".join(map(str, answer.turns)) or str(answer.turn)
    head = f"undo turn {answer.turn} (recorded turns {turns})" if answer.turns else f"undo turn {answer.turn}"
    lines = [head + (": done" if done else ": preview")]
    words = {"restore": "restore ", "restored": "restored", "conflict": "KEEP    ", "refused": "CANNOT  "}
    for item in answer.files:
        what = _change(item.before, item.after)
        reason = f" ({item.reason})" if item.reason else ""
        lines.append(f"  {words[item.status]} {item.path}: {what}{reason}")
    if not answer.files:
        lines.append("  no file to restore")
    lines.extend(f"  not undoable: {note}" for note in answer.not_undoable)
    lines.append("  the conversation " + ("returned" if done else "returns") + f" to before turn {answer.turn}")
    return lines


def _change(before: dict[str, Any], after: dict[str, Any]) -> str:
    if before.get("kind") == "absent":
        return f"remove (the turn created this {after.get('kind')})"
    if after.get("kind") == "absent":
        return f"recreate (the turn removed this {before.get('kind')})"
    if before.get("mode") != after.get("mode") and before.get("sha256") == after.get("sha256"):
        return f"mode back to {oct(before.get('mode') or 0)[2:]}"
    return f"put back the {before.get('kind')} as it was"


def _checked(answer: dict[str, Any], sent: UndoRequest, hook: HookEntry) -> UndoAnswer:
    try:
        result: UndoAnswer = CHECKS[UNDO_EVENT](answer, sent.as_json())
    except HookResultError as exc:
        raise UndoRefused(
            f"undo: worker {describe_worker(hook.exec, hook.module)} {exc}; nothing was changed here"
        ) from exc
    return result


def _ranges(turns: list[int]) -> str:
    return ", ".join(map(str, turns))


def undo_command(agent: Any, argument: str, say: Any, ask: Any) -> None:
    """The console's ``/undo [N]``: preview, ``ask(question) -> bool``, apply; ``say`` gets each line
    (sanitised by the console). A refusal is an ``UndoRefused``."""
    if argument and not argument.isdigit():
        raise UndoRefused(f"/undo takes a turn number, got {argument!r}")
    plan = plan_undo(agent.hooks, agent.session, agent.history, int(argument) if argument else None)
    for line in describe(plan.answer, done=False):
        say(line)
    if not ask(f"undo turn {plan.turn}?"):
        say("nothing was changed")
        return
    answer, kept = apply_undo(agent.hooks, agent.checkpoints, agent.history, plan)
    agent.history = kept
    for line in describe(answer, done=True):
        say(line)
