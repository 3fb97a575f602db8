"""Running hooks and external tools of a manifest through the worker pool.

An event nobody handles costs nothing: ``run`` hands back the very data it was given (the
documented pass-through: "unchanged"), so callers call it without asking ``has`` first. ``has``
is for the few decisions that depend on a worker being installed (is there a compactor, is
budgeting on).
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

from .cancel import Cancelled
from .errors import HookResultError, WorkerFailure
from .hook_results import CHECKS, Checker, ToolResult, undeclared
from .kept_tools import depends_on
from .manifest import Exec, HookEntry, Manifest, ToolEntry
from .pool import WorkerPool, describe_worker

if TYPE_CHECKING:
    from .kept_tools import KeptTools

FIRST_REQUEST_EVENTS = (
    "tools_list",
    "session_load",
    "system_prompt",
    "user_input",
    "before_turn",
    "context_budget",
    "before_request",
)
"""The events a session fires up to its first model request (``session_load`` for a saved session,
``system_prompt`` for a new one). Their workers start together when a session starts (a
``tools_list`` subscriber whose answer is kept, ``kept_tools``, only at its first tool call); every
other worker (a tool's, the compactor, ``tool_approval``, ``after_*``) starts at its first call, so a
run never starts a process it does not use."""


class HookRunner:
    """Chains the hooks of each event in manifest order; each gets the previous one's full data."""

    def __init__(self, manifest: Manifest, pool: WorkerPool, context: dict[str, Any]) -> None:
        self.manifest = manifest
        self.pool = pool
        # Top-level request context (workspace, workspace_id): fixed by the core, never by the model.
        self.context = dict(context)
        self._by_event: dict[str, list[HookEntry]] = {}
        self.problems: list[str] = []
        """What ``tools_list`` subscribers left out and why (their ``problems``), one line each, said
        once per session by the console (stderr, and ``warnings`` of ``--json``)."""
        self.progress: Callable[[str], None] | None = None
        """Where a tool's progress text goes (the console's progress line); None: not asked for."""
        self.stop: threading.Event | None = None
        """Once set, the next worker call raises ``Cancelled`` instead (a copy of the runner made for
        the compaction prepared in the background, ``prepare``; never the agent's own runner)."""

    def stopped_by(self, stop: threading.Event) -> HookRunner:
        """A runner over the same workers and context whose next worker call raises ``Cancelled``
        once ``stop`` is set (the compaction prepared in the background)."""
        runner = copy.copy(self)
        runner.stop = stop
        return runner

    def _call(self, hook: HookEntry, event: str, data: dict[str, Any]) -> dict[str, Any]:
        if self.stop is not None and self.stop.is_set():
            raise Cancelled(f"stopped before {event!r}")
        return self.pool.call(hook.exec, event, data, self.context, module=hook.module)

    def subscribers(self, event: str) -> list[HookEntry]:
        """Hooks subscribed to ``event`` (computed once per event)."""
        found = self._by_event.get(event)
        if found is None:
            found = self._by_event[event] = self.manifest.hooks_for(event)
        return found

    def workers_for(self, events: tuple[str, ...]) -> list[Exec]:
        """The distinct worker programs subscribed to any of ``events``, in first-use order."""
        found: dict[tuple[tuple[str, ...], str], Exec] = {}
        for event in events:
            for hook in self.subscribers(event):
                found.setdefault(hook.exec.key, hook.exec)
        return list(found.values())

    def has(self, event: str) -> bool:
        """True when at least one hook handles ``event`` (for decisions, not to guard ``run``)."""
        return bool(self.subscribers(event))

    def declared(self, event: str, extension: str) -> bool:
        """True when every hook of ``event`` declared ``extension`` in its ``hello`` (none: False)."""
        hooks = self.subscribers(event)
        return bool(hooks) and all(self._declared_by(hook, extension) for hook in hooks)

    def greet(self, event: str) -> None:
        """Greet every hook of ``event`` now, so ``declared`` knows before their first call (one that
        cannot start is left to that call to report)."""
        for hook in self.subscribers(event):
            self.pool.greet(hook.exec, hook.module, lenient=True)

    def run(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        """Pass ``data`` through every subscriber of ``event``; with none, ``data`` itself comes back."""
        for hook in self.subscribers(event):
            data = self._call(hook, event, data)
        return data

    def checked(self, event: str, data: dict[str, Any], *, consequence: str | None = None) -> Any:
        """``run``, with each hook's answer checked against what ``event`` must return (``hook_results``).

        Returns the event's typed result (of ``data`` itself when nobody handles the event). A
        broken contract is a ``HookResultError`` naming the event, the hook and what it returned,
        then ``consequence`` (what the core did not do because of it) when given.
        """
        check = CHECKS[event]
        hooks = self.subscribers(event)
        if not hooks:
            return check(data, data)
        result = None
        for hook in hooks:
            answer = self._call(hook, event, data)
            answer, dropped = undeclared(event, answer, partial(self._declared_by, hook))
            result = _checked(check, answer, data, f"hook failed on {event!r}", hook, consequence, dropped)
            data = answer
        return result

    def checked_with(
        self, event: str, data: dict[str, Any], extension: str, fields: dict[str, Any]
    ) -> tuple[Any, list[str]]:
        """``checked``, where each hook that declared ``extension`` also gets ``fields`` (``before_tool`` /
        ``after_tool`` with ``turn_context``: session and turn) and may answer a ``notice`` line.

        Returns (the event's typed result, the notices in hook order). ``fields`` and ``notice`` are
        taken off each answer before the next hook and the check, so no other hook sees them.
        """
        check = CHECKS[event]
        hooks = self.subscribers(event)
        if not hooks:
            return check(data, data), []
        result, notices = None, []
        for hook in hooks:
            sent = data
            if fields:
                self.pool.greet(hook.exec, hook.module)
                if self._declared_by(hook, extension):
                    sent = {**data, **fields}
            answer = self._call(hook, event, sent)
            if sent is not data and isinstance(answer, dict):
                notice = answer.get("notice")
                if isinstance(notice, str) and notice.strip():
                    notices.append(notice.strip())
                answer = {key: value for key, value in answer.items() if key not in fields and key != "notice"}
            answer, dropped = undeclared(event, answer, partial(self._declared_by, hook))
            result = _checked(check, answer, data, f"hook failed on {event!r}", hook, None, dropped)
            data = answer
        return result, notices

    def _declared_by(self, hook: HookEntry, extension: str) -> bool:
        handshakes = self.pool.handshakes
        return handshakes is not None and handshakes.declared(hook.exec, extension)

    def kept_answers(self, kept: KeptTools) -> dict[int, dict[str, Any]]:
        """The ``tools_list`` answers ``kept`` still holds, by subscriber index (``kept_tools``)."""
        found: dict[int, dict[str, Any]] = {}
        for index, hook in enumerate(self.subscribers("tools_list")):
            answer = kept.load(hook, self.context)
            if answer is not None:
                found[index] = answer
        return found

    def announced_tools(
        self, kept: KeptTools | None = None, answers: dict[int, dict[str, Any]] | None = None
    ) -> tuple[ToolEntry, ...]:
        """Ask each ``tools_list`` subscriber for the tools it found at run time (the manifest is unchanged).

        Each subscriber is asked on its own (``{"tools": []}``, not chained), so every tool belongs
        to the worker that announced it, which then receives its ``tool`` calls. A name the manifest
        or an earlier worker already uses is a ``HookResultError`` naming both. ``answers`` are kept
        ones (``kept_answers``), used instead of asking; an answer with ``depends_on`` is kept in
        ``kept`` for the next session.
        """
        announced: dict[str, ToolEntry] = {}
        what = "hook failed on 'tools_list'"
        for index, hook in enumerate(self.subscribers("tools_list")):
            # ``problems: []`` says this core shows problems (SPEC §3.4): a worker may then leave a
            # broken server out instead of failing; one that does not know the field returns it as is.
            sent: dict[str, Any] = {"tools": [], "problems": []}
            schemas = _kept_schemas((answers or {}).get(index), sent)
            if schemas is None:
                answer = self.pool.call(hook.exec, "tools_list", sent, self.context, module=hook.module)
                stamps = _checked(depends_on, answer, sent, what, hook, "the session did not start")
                schemas = _checked(CHECKS["tools_list"], answer, sent, what, hook, "the session did not start")
                problems = problem_lines(answer, hook.module) if self._declared_by(hook, "problems") else []
                self.problems += problems
                if stamps is not None and kept is not None and not problems:  # never keep an answer with problems
                    kept.store(hook, self.context, list(schemas), stamps)
            for schema in schemas:
                name = schema["name"]
                owner = announced.get(name) or self.manifest.tool(name)
                if owner is not None:
                    worker, other = describe_worker(hook.exec, hook.module), describe_worker(owner.exec, owner.module)
                    raise HookResultError(
                        f"{what}: worker {worker} announced tool {name!r}, which worker {other} already provides; "
                        "the session did not start"
                    )
                announced[name] = ToolEntry(
                    name, schema["description"], schema["parameters"], hook.exec, module=hook.module
                )
        return tuple(announced.values())

    def tool(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the external tool ``name``; its answer must hold a text ``output`` (images are checked per batch)."""
        tool = self._tool(name)
        sent = {"name": name, "arguments": arguments}
        shown = self.progress
        progress = None if shown is None else partial(_show_progress, shown, name)
        answer = self.pool.call(tool.exec, "tool", sent, self.context, module=tool.module, progress=progress)
        result: ToolResult = _checked(CHECKS["tool"], answer, sent, f"tool {name!r} failed", tool)
        return result

    def _tool(self, name: str) -> ToolEntry:
        tool = self.manifest.tool(name)
        if tool is None:
            raise WorkerFailure(f"unknown tool {name!r}")
        return tool


MAX_PROBLEMS = 50
MAX_PROBLEM_CHARS = 2000


def problem_lines(answer: dict[str, Any], module: str | None) -> list[str]:
    """One line per entry of a ``tools_list`` answer's ``problems`` ``[{server, reason, message?,
    stderr_tail?}]`` (bounded; malformed entries are skipped): what the worker left out and why."""
    found = answer.get("problems")
    if not isinstance(found, list):
        return []
    lines: list[str] = []
    for entry in found[:MAX_PROBLEMS]:
        if not isinstance(entry, dict) or not isinstance(entry.get("server"), str):
            continue
        reason, message, tail = entry.get("reason"), entry.get("message"), entry.get("stderr_tail")
        said = reason if isinstance(reason, str) and reason else "unavailable"
        text = message if isinstance(message, str) and message else f"server {entry['server']!r}: {said}"
        if isinstance(tail, str) and tail.strip() and tail.strip() not in text:
            text += f"; its stderr ends: {tail.strip()[-MAX_PROBLEM_CHARS:]}"
        who = f"{module}: " if module else ""
        lines.append(who + text[:MAX_PROBLEM_CHARS].replace("\n", " | "))
    return lines


def _show_progress(show: Callable[[str], None], name: str, update: dict[str, Any]) -> None:
    """A tool's progress frame as console text: ``NAME: message (3/10)``."""
    done, total, message = update.get("progress"), update.get("total"), update.get("message")
    count = f"{done:g}/{total:g}" if done is not None and total is not None else f"{done:g}" if done is not None else ""
    text = " ".join(part for part in (message or "", f"({count})" if count else "") if part)
    show(f"{name}: {text}" if text else f"{name} is working")


def _kept_schemas(answer: dict[str, Any] | None, sent: dict[str, Any]) -> tuple[dict[str, Any], ...] | None:
    """The schemas of a kept ``tools_list`` answer, or None (none kept, or no longer valid: ask again)."""
    if answer is None:
        return None
    try:
        schemas: tuple[dict[str, Any], ...] = CHECKS["tools_list"](answer, sent)
    except HookResultError:
        return None
    return schemas


def _checked(
    check: Checker,
    answer: dict[str, Any],
    sent: dict[str, Any],
    what: str,
    entry: HookEntry | ToolEntry,
    consequence: str | None = None,
    dropped: list[tuple[str, str]] | None = None,
) -> Any:
    try:
        return check(answer, sent)
    except HookResultError as exc:
        message = f"{what}: worker {describe_worker(entry.exec, entry.module)} {exc}"
        for field, extension in dropped or ():
            message += f" ({field} was not read: the worker did not declare the {extension!r} extension in hello)"
        if consequence:
            message += f"; {consequence}"
        raise HookResultError(message, check=exc.check) from exc
