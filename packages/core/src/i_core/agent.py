"""The agent loop: user input -> (budget, compaction) -> model -> tools -> ... -> answer.

The core owns credentials, transport, retries, tool-call pairing, history validation and
checkpoints. A checkpoint is saved only at a complete state (a finished tool batch or a final
answer), so a failed turn leaves the last complete checkpoint on disk.
"""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from i_protocol.history import HistoryError, check_tool_calls

from .approval import ApprovalGate
from .archive import Archive, Generation, Index, citation
from .budget import Budget, has_cut
from .checkpoints import Checkpoints
from .compaction import Compactor, Outcome, Prepared
from .errors import CompactionError, ContextTooLong, CoreError, ModelError, SessionError
from .hook_results import BudgetCheck
from .model import ModelClient
from .runtime import Runtime
from .session import Session
from .settings import ApiConfig
from .snapshot import context_updates
from .tool_calls import ToolCallCounts, ToolPipeline
from .tools import BUILTIN_SCHEMAS, ToolContext, ToolError, normal_env
from .unplanned_images import HINT as IMAGE_HINT
from .unplanned_images import leave_out

MAX_AGENT_STEPS = 200


class TextOut(Protocol):
    """Where streamed answer text goes: a text stream, or the console's answer writer."""

    def write(self, text: str, /) -> object: ...
    def flush(self) -> None: ...


@dataclass
class AgentOptions:
    """How the agent interacts: approvals, streaming, where text and progress go."""

    yolo: bool = False
    # The interactive approval prompt, called as ask(summary, preview): True/"y" runs the tool,
    # "a" runs it and allows it for the rest of the session, "d" denies it for the session,
    # anything else declines. None = non-interactive.
    ask: Callable[..., bool | str] | None = None
    preview: Callable[[Any], str | None] | None = None  # what the user sees of a prepared change (a diff)
    stream: bool | None = None
    out: TextOut = field(default_factory=lambda: sys.stdout)
    progress: Callable[[str], None] = lambda _message: None
    notice: Callable[[str], None] = lambda _message: None
    """A line the user must see once (stderr, kept, even with ``--quiet``): a dropped anchor, an image left out."""
    max_steps: int = MAX_AGENT_STEPS
    plan: bool = False
    """Start in plan mode (``--plan``): write, edit and shell refused, a plan asked for."""
    offer_save: Callable[[list[str]], bool] | None = None
    """After "always" for a shell command: whether to save its allow rules for the workspace."""
    events: Callable[[str, dict[str, Any]], None] | None = None
    """Told of tool calls, approvals, tool results and compactions (``--output-format stream-json``)."""


@dataclass
class RunStats:
    """What a run did, for the summary line and the main job's report."""

    turns: int = 0
    model_requests: int = 0
    images_left_out: int = 0
    """Images the last request left out because no ``budget.image_tokens`` is set (kept in the session)."""
    image_hint_given: bool = False
    tools: ToolCallCounts = field(default_factory=ToolCallCounts)
    """The tool calls asked for, run and refused, each in call order."""
    compactions: int = 0
    compact_attempts: int = 0
    last_compaction: str = ""
    last_failure: str = ""
    """The last compaction attempt that failed or was declined, with the refusing component's reason."""
    rejections: int = 0
    """Requests the model server refused as too long (each recovered once, or the turn failed)."""
    last_budget: dict[str, Any] | None = None
    prepared: dict[str, int] = field(default_factory=lambda: {"made": 0, "used": 0, "wasted": 0, "requests": 0})
    """Summaries prepared ahead of the trigger (``prepare``): made, used by a compaction, wasted
    (dropped unused: the prefix or the model changed, or the run ended first), and the summary
    requests they took."""


PLAN_NOTE = (
    "[plan mode: the user wants a plan before any change. You may read, glob and search; write, edit and "
    "shell calls are refused. Investigate, then answer with a concrete plan (files, changes, commands, "
    "checks) and stop; the user approves it with /act.]"
)
ACT_NOTE = (
    "[plan mode is over: carry out the plan; write, edit and shell are available again, with the user's approval.]"
)
SESSION_ID = "id"
"""The session meta key of the session's id (what ``turn_context`` workers and ``undo`` key by)."""
TURN_COUNTER = "turn"
"""The session meta key of the last turn's number."""
TURN_MARK = "_turn"
"""The field of the user message that opened a turn: its number (``undo`` rolls back to before it)."""

INTERRUPTED = "interrupted"
"""The session meta key that says the last checkpoint holds part of a turn the user cancelled."""


def interruption_note(record: object) -> list[dict[str, Any]]:
    """The marked part that opens the next user message after a cancelled turn (none without one).

    Marked ``_interrupted: true``: compactors never take it as the user's request or a cut anchor.
    """
    if not isinstance(record, dict):
        return []
    names = [name for name in record.get("tool_calls", []) if isinstance(name, str)]
    done = f"{len(names)} tool call{'s' if len(names) != 1 else ''} ({', '.join(names)})" if names else "its tool calls"
    text = (
        f"[the user interrupted the previous turn after {done}; their results are above, nothing after "
        "them ran and that turn has no answer. The user's next message follows.]"
    )
    return [{"type": "text", "text": text, "_interrupted": True}]


class Agent:
    """One session's agent: a history, the runtime's hooks and tools, and the model client."""

    def __init__(self, runtime: Runtime, config: ApiConfig, session: Session, options: AgentOptions) -> None:
        self.runtime = runtime
        self.hooks = runtime.hooks
        self.hooks.progress = options.progress  # a long tool's progress frames (SPEC §3.4)
        self.config = config
        self.session = session
        self.options = options
        self.model = ModelClient(config, self.hooks, stream=options.stream)
        self.budget = Budget(self.hooks, config, session.meta)
        self.budget.warn = options.notice
        self.tool_schemas: list[dict[str, Any]] = [*BUILTIN_SCHEMAS, *runtime.manifest.model_tools()]
        self.checkpoints = Checkpoints(self.hooks, session, runtime.workspace)
        self.stats = RunStats()
        self.history: list[dict[str, Any]] = []
        self.prepared: Prepared | None = None
        """The next compaction's summary, made ahead of the trigger (``prepare``); memory only."""
        self._archived_ids: tuple[Any, frozenset[str]] = (None, frozenset())
        self.gate = ApprovalGate(
            self.hooks,
            options.ask,
            options.preview,
            workspace=str(runtime.workspace),
            state_dir=runtime.state_dir,
            offer_save=options.offer_save,
            notice=options.notice,
        )
        self._mode_note: str | None = None
        self.set_plan(options.plan)
        self.tools = ToolPipeline(
            self.hooks,
            runtime.manifest,
            ToolContext(workspace=Path(runtime.workspace), env=normal_env(), archived=self._archived),
            self.tool_schemas,
            self.gate,
            self.budget,
            yolo=options.yolo,
            progress=options.progress,
            notice=options.notice,
            counts=self.stats.tools,
            events=options.events,
        )

    # -- plan mode ----------------------------------------------------------------------

    def set_plan(self, plan: bool) -> None:
        """Enter or leave plan mode; the next user message opens with a note that says so (the system
        prompt and the history stay as they are, so the prompt prefix stays valid)."""
        if plan == self.gate.plan:
            return
        self.gate.plan = plan
        # Left before the model even saw the plan note: nothing to say.
        self._mode_note = None if not plan and self._mode_note == PLAN_NOTE else (PLAN_NOTE if plan else ACT_NOTE)

    def _take_mode_note(self) -> list[dict[str, Any]]:
        note, self._mode_note = self._mode_note, None
        return [] if note is None else [{"type": "text", "text": note, "_mode": "plan" if self.gate.plan else "act"}]

    # -- session ------------------------------------------------------------------------

    def _archived(self) -> list[Generation]:
        """The session's committed archived generations (what ``recall`` reads); a ToolError when
        the archive cannot be read or a generation the session recorded is unreadable."""
        index = Index.from_meta(self.session.meta)
        archive = Archive(self.session.path, self.config.archive_max_bytes)
        try:
            found, missing = archive.read(index)
        except SessionError as exc:
            raise ToolError(f"recall: {exc}") from None
        if missing and not found:
            raise ToolError(
                f"recall: the archive {archive.path} is damaged or gone: generation(s) "
                f"{', '.join(map(str, missing))} cannot be read"
            )
        return found

    def _archived_call_ids(self) -> frozenset[str]:
        """The tool call ids still in the archive, from the session's index (never the archive file);
        computed again only when a compaction changed the index."""
        raw = self.session.meta.get("archive")
        key = (
            (raw.get("next_generation"), raw.get("size"), len(raw.get("spans") or ()))
            if isinstance(raw, dict)
            else None
        )
        if key != self._archived_ids[0]:
            self._archived_ids = (key, Index.from_meta(self.session.meta).call_ids())
        return self._archived_ids[1]

    def start(self) -> None:
        """Load the session (``session_load``) or start it with the system prompt (``system_prompt``)."""
        self.history = self.checkpoints.load()
        self.session.meta.setdefault(SESSION_ID, uuid.uuid4().hex)
        if self.history:
            self.budget.usable_anchor(self.history, self.tool_schemas)  # a poisoned anchor is repaired at load

    def use_session(self, session: Session) -> None:
        """Go on in another session (the console's ``/new`` and ``/resume``): its own checkpoints,
        usage anchor and history; the model, the approvals given and plan mode stay."""
        self.session = session
        self.checkpoints = Checkpoints(self.hooks, session, self.runtime.workspace)
        self._use_budget(Budget(self.hooks, self.config, session.meta))
        self._archived_ids = (None, frozenset())
        self.stats.last_budget = None
        self.model.last_usage = None  # the last request's usage was another session's
        self.prepared = None  # a summary prepared for the other session's prefix
        self.history = []
        self.start()

    def use_config(self, config: ApiConfig) -> None:
        """Send the next requests with ``config`` (the console's ``/model``), history kept.

        The protocol is checked first (a ConfigError changes nothing). Another model or protocol
        drops the usage anchor (it holds for the same model only, SPEC §4); the budget then uses the
        new window and density key, and compacts before the next request when that needs it.
        """
        model = ModelClient(config, self.hooks, stream=self.options.stream)
        for observer in self.model.observers:
            model.observe(observer)
        self.model.close()
        self.model = model
        if (config.model, config.protocol, config.origin) != (
            self.config.model,
            self.config.protocol,
            self.config.origin,
        ):
            self.session.meta.pop("usage_anchor", None)
        self.config = config
        self._use_budget(Budget(self.hooks, config, self.session.meta))
        self.stats.last_budget = None

    def _use_budget(self, budget: Budget) -> None:
        self.budget.close()
        budget.warn = self.options.notice
        self.budget = budget
        self.tools.budget = budget

    def keep_prepared(self, prepared: Prepared) -> None:
        """Hold a summary prepared ahead of the trigger (one at a time: an earlier one was wasted)."""
        if self.prepared is not None:
            self.stats.prepared["wasted"] += 1
        self.prepared = prepared
        self.stats.prepared["made"] += 1
        self.stats.prepared["requests"] += prepared.requests

    def summary_meta(self) -> dict[str, Any]:
        """What a summary request's ``request_meta`` carries: its kind and the session it is for."""
        return {"kind": "summary", "session": self.session.meta.get(SESSION_ID)}

    def checkpoint(self, history: list[dict[str, Any]] | None = None) -> None:
        """Save a complete state (the current history, or ``history``) through the save hooks."""
        self.checkpoints.save(self.history if history is None else history)

    # -- a task ---------------------------------------------------------------------------

    def run(self, text: str | None, *, attached: Sequence[dict[str, Any]] = ()) -> str:
        """Run one user request to its final answer; returns the answer text.

        ``None``: a turn with no input of its own, started from what ``before_turn`` appends (the
        console's queued steering input); nothing is sent when it appends nothing. ``attached``:
        text parts that go before the user's words (piped stdin), after the interruption note when
        the last checkpoint holds part of a turn the user cancelled.
        """
        content: Any = text
        turn = self._next_turn()
        if text is not None:
            content = self.hooks.checked("user_input", {"content": text})
            lead = [*interruption_note(self.session.meta.pop(INTERRUPTED, None)), *self._take_mode_note(), *attached]
            if lead:
                words = content if isinstance(content, list) else [{"type": "text", "text": content}]
                content = [*lead, *words]
        asked = {"role": "user", "content": content, TURN_MARK: turn}
        working = [*self.history, asked] if text is not None else list(self.history)
        self.stats.turns += 1
        ran: list[str] = []  # the tools of this turn's checkpointed batches
        try:
            return self._turn(text, working, ran)
        except KeyboardInterrupt:
            if ran:
                self._record_interruption(ran)
            raise

    def _next_turn(self) -> int:
        """Number the turn that starts (``meta.turn``: never reused, not even after an undo) and tell
        the tool pipeline, whose ``turn_context`` workers key their records by it."""
        last = self.session.meta.get(TURN_COUNTER)
        turn = (last if isinstance(last, int) and not isinstance(last, bool) and last > 0 else 0) + 1
        self.session.meta[TURN_COUNTER] = turn
        session = self.session.meta.setdefault(SESSION_ID, uuid.uuid4().hex)
        self.tools.turn = {"session": session, "turn": turn}
        return turn

    def _record_interruption(self, ran: list[str]) -> None:
        """After Ctrl-C, when the last checkpoint holds part of the cancelled turn: say so in the
        session's meta (its messages rewritten unchanged), for the next user message's note."""
        self.session.meta[INTERRUPTED] = {"tool_calls": ran}
        try:
            self.session.write(list(self.session.messages))
        except (CoreError, OSError):
            pass  # in memory only: the console's next message still carries the note

    def _turn(self, text: str | None, working: list[dict[str, Any]], ran: list[str]) -> str:
        for step in range(self.options.max_steps):
            working = self._before_turn(working, user_last=text is not None and step == 0)
            if text is None and step == 0 and not any("_steering" in m for m in working[len(self.history) :]):
                return ""
            self._say_images_left_out(working)
            working, sent = self._ensure_budget(working)
            working, sent, reply = self._request(working, sent)
            self.stats.model_requests += 1
            self.budget.record_usage(sent, reply.usage, working, self.tool_schemas)
            message = reply.message
            calls = message.get("tool_calls")
            if not calls:
                if reply.finish_reason not in ("stop", "length"):
                    raise ModelError(f"the model stopped with finish reason {reply.finish_reason!r} and no answer")
                working.append(message)
                self.history = working
                self.checkpoint()
                self.hooks.run("finish", {"messages": self.history})
                return message.get("content") or ""
            try:
                check_tool_calls(calls, "model reply")
            except HistoryError as exc:
                raise ModelError(f"the model's tool calls are invalid: {exc}") from None
            if reply.finish_reason not in ("tool_calls", "stop"):
                raise ModelError(f"the model's tool-call reply was cut off (finish reason {reply.finish_reason!r})")
            working = [*working, message, *self.tools.run_batch([*working, message], calls)]
            self.checkpoint(working)  # validated there, before anything is written or kept
            self.history = working
            ran.extend(call["function"]["name"] for call in calls)
        raise ModelError(f"stopped after {self.options.max_steps} model requests without a final answer")

    def _say_images_left_out(self, working: list[dict[str, Any]]) -> None:
        """Count the images the next request leaves out (no planned cost); hint the user once."""
        left = leave_out(working, self.config.budget)[1] if self.budget.enabled else 0
        self.stats.images_left_out = left
        if left and not self.stats.image_hint_given:
            self.stats.image_hint_given = True
            self.options.notice(IMAGE_HINT.format(count=left))

    def _on_text(self, text: str) -> None:
        self.options.out.write(text)
        self.options.out.flush()

    def _before_turn(self, working: list[dict[str, Any]], *, user_last: bool = False) -> list[dict[str, Any]]:
        """``working`` with what ``before_turn`` adds: the context snapshot's messages, then its appended
        messages. On a turn's first step (``user_last``: ``working`` ends with the user's new request,
        which the hook sees) the snapshot's messages go before the request, so that the user's words
        are the last thing the model reads; nothing checkpointed moves."""
        add = self.hooks.checked("before_turn", {"messages": working, "workspace": self.runtime.workspace})
        context: list[dict[str, Any]] = []
        if add.context:
            injected = self.session.meta.get("context_state", {})
            context, state = context_updates(add.context, injected)
            self.session.meta["context_state"] = state
        if not context and not add.append:
            return working
        if user_last and context:
            return [*working[:-1], *context, working[-1], *add.append]
        return [*working, *context, *add.append]

    def _request(
        self, working: list[dict[str, Any]], sent: BudgetCheck | None
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None, Any]:
        """Send ``working``; a "context too long" refusal is recovered once (learn, compact, send anew)."""
        on_text = self._on_text if self.model.stream else None
        self.options.progress("model thinking")
        try:
            return (
                working,
                sent,
                self.model.complete(
                    working, self.tool_schemas, on_text=on_text, archived_ids=self._archived_call_ids()
                ),
            )
        except ContextTooLong as exc:
            self.stats.rejections += 1
            if not self.budget.enabled:
                raise ModelError(f"{exc}; enable the budget and compact modules to recover from this") from None
            rejection = {"input_tokens": exc.input_tokens, "limit": exc.limit}
            working, sent = self._ensure_budget(working, rejection=rejection)
        self.options.progress("model thinking (after compaction)")
        try:
            return (
                working,
                sent,
                self.model.complete(
                    working, self.tool_schemas, on_text=on_text, archived_ids=self._archived_call_ids()
                ),
            )
        except ContextTooLong as exc:
            self.stats.rejections += 1
            raise ModelError(
                f"the model server refused the request as too long again after compaction ({exc}); "
                f"the last checkpoint {self.session.path} is unchanged"
            ) from None

    def _ensure_budget(
        self, working: list[dict[str, Any]], *, rejection: dict[str, int | None] | None = None
    ) -> tuple[list[dict[str, Any]], BudgetCheck | None]:
        """The history to send (compacted if needed) and the budget answer of exactly that request."""
        working, check = self.budget.enforce(
            working,
            self.tool_schemas,
            lambda history, check, force: self.compact(history, check, force=force),
            rejection=rejection,
            progress=self.options.progress,
            where=str(self.session.path),
        )
        if check is not None:
            self.stats.last_budget = check.verdict.raw
        return working, check

    def compact(
        self,
        history: list[dict[str, Any]],
        check: BudgetCheck | None = None,
        *,
        force: bool = False,
        focus: str | None = None,
    ) -> Outcome:
        """One compaction attempt over ``history``; a committed one becomes the session's history.
        ``focus``: what ``/compact FOCUS`` asks the summary to keep (the compactor may ignore it).

        The committed candidate's replaced messages are archived first (``archive``), then the last
        full backup (``.precompact.json``) is written, then the checkpoint whose meta records them.
        """
        if not has_cut(history):  # SPEC §3.5 step 3 cannot pass: no attempt, no failure
            return Outcome(committed=False, history=history, check="declined", reason="nothing to compact yet")
        archive = Archive(self.session.path, self.config.archive_max_bytes)
        index = Index.from_meta(self.session.meta)
        planned: list[tuple[Generation | None, Index]] = []

        def cite(replaced: list[dict[str, Any]]) -> str:
            try:
                planned.append(archive.plan(index, replaced))
            except SessionError as exc:  # an archive that cannot be read: compact nothing rather than lose it
                raise CompactionError("archive_failed", str(exc)) from None
            return citation(planned[-1][1])

        compactor = Compactor(
            self.hooks,
            self.budget,
            self.model,
            self.config,
            self.runtime.workspace,
            self.tool_schemas,
            self.session.meta.get("context_state", {}),
            self.options.progress,
            cite,
            notice=self.options.notice,
            focus=focus,
            prepared=self.prepared,
            request_meta=self.summary_meta(),
        )
        self.stats.compact_attempts += 1
        outcome = compactor.run(history, check, force=force)
        if outcome.committed:
            before = self.session.meta.get("archive")
            try:
                generation, after = planned[-1]
                if generation is not None:
                    after = archive.write(index, generation, after)
                outcome.backup = str(self.session.write_backup("precompact", history))
                self.session.meta["archive"] = after.to_meta()
                self.checkpoint(outcome.history)
            except (CoreError, HistoryError, OSError) as exc:
                _restore_key(self.session.meta, "archive", before)
                outcome = outcome.refused("save_failed", f"the compacted history could not be saved: {exc}")
            else:
                self.history = outcome.history
                self.stats.compactions += 1
                self._settle_prepared(compactor.used)
        if self.options.events is not None:
            self.options.events(
                "compaction",
                {
                    "committed": outcome.committed,
                    "check": outcome.check,
                    "reason": outcome.reason,
                    "cut": outcome.cut,
                    "messages_before": len(history),
                    "messages_after": len(outcome.history) if outcome.committed else len(history),
                    "backup": outcome.backup,
                },
            )
        warning = compactor.report(outcome)
        if warning:
            self.options.progress(warning)
        self.stats.last_compaction = outcome.reason
        if not outcome.committed:
            self.stats.last_failure = f"{outcome.check}: {outcome.reason}"
        return outcome

    def _settle_prepared(self, used: str | None) -> None:
        """After a commit the prefix changed: the prepared summary was used, or it is wasted."""
        if self.prepared is None:
            return
        self.stats.prepared["used" if used else "wasted"] += 1
        self.prepared = None

    def close(self) -> None:
        """Release the model client and the budget's counting connection."""
        if self.prepared is not None:  # the run ends before its trigger: paid for, never used
            self.stats.prepared["wasted"] += 1
            self.prepared = None
        self.model.close()
        self.budget.close()


def _restore_key(meta: dict[str, Any], key: str, value: Any) -> None:
    if value is None:
        meta.pop(key, None)
    else:
        meta[key] = value
