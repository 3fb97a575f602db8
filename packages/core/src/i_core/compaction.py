"""The compaction transaction (SPEC §3.5): plan, prepare, summarise, post-process, check.

``Compactor.run`` returns an ``Outcome``; it never touches the agent or the session file. The
caller applies a committed outcome (backup + checkpoint) and then calls ``Compactor.report``,
which sends ``after_compact_commit`` so a compactor's diagnostics follow the core's decision.
Every step is checked; any failure commits nothing and names the check that refused.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from i_protocol.history import HistoryError, is_summary, summary_marker, validate_history, wire_bytes
from i_protocol.summary import EXTENSION as OVERHEAD_EXTENSION
from i_protocol.summary import SUMMARY_INTRO, request_overhead, summary_request

from .archive import CITATION_OPEN, LEGACY_CITATION_OPENS
from .budget import Budget, digest
from .errors import CompactionError, HookResultError, ModelError, WorkerFailure, WorkerIncompatible
from .hook_results import BudgetCheck, CompactPlan, PreparedSummary, Revision
from .hooks import HookRunner
from .model import ModelClient
from .settings import ApiConfig
from .snapshot import restore_snapshots

MAX_AFTER_COMPACT_ROUNDS = 4
"""``after_compact`` may ask for further summary requests; the transaction fails after this many rounds."""
FRAME_HEADROOM = 1 << 20
"""Room in a frame for what travels with the history (budget output, state, request context)."""


CLEAR_REDUCTION = 0.5
"""A candidate of at most this share of the history's bytes is a reduction a budget must see."""

CANDIDATE_OVER_BUDGET = "candidate_over_budget"
PREPARED_EXTENSION = "prepared"
"""The extension of ``compact_plan``'s and ``before_compact``'s ``prepared`` field (SPEC §3.4)."""
NEXT_LINE: dict[str, Any] = {"role": "user", "content": ""}
"""What stands for the user's next line when a compaction is planned ahead of the trigger."""
SUMMARY_NOT_FINISHED = "summary_not_finished"
"""``previous_attempt`` reasons (SPEC §3.4): ``compact_plan`` is called once more per reason, at
most twice in one compaction."""


class SummaryNotFinished(CompactionError):
    """A model summary reply that did not end with finish reason ``stop`` (it is never used)."""


@dataclass
class _Replans:
    """The further ``compact_plan`` calls of one compaction: at most one per reason."""

    reasons: list[str] = field(default_factory=list)
    over_budget_cut: int | None = None
    last_error: CompactionError | None = None
    """What made the core plan again the last time."""

    def add(self, cut: int, reason: str, error: CompactionError) -> str:
        """Record a further plan for ``reason``; raises ``error`` when that reason was used already."""
        if reason in self.reasons:
            raise error
        self.reasons.append(reason)
        self.last_error = error
        if reason == CANDIDATE_OVER_BUDGET:
            self.over_budget_cut = cut
        return reason

    def check_later(self, cut: int) -> None:
        """After a candidate over budget, the next plan's cut must be later."""
        previous = self.over_budget_cut
        if previous is not None and cut <= previous and self.reasons[-1] == CANDIDATE_OVER_BUDGET:
            raise CompactionError(
                CANDIDATE_OVER_BUDGET,
                f"the candidate at cut {previous} did not fit and compact_plan's second cut {cut} is not later",
            )

    def declined(self, outcome: Outcome, reason: str) -> Outcome:
        """A plan that declines: right after an unfinished summary, that summary's failure stands."""
        error = self.last_error
        if isinstance(error, SummaryNotFinished):
            raise CompactionError(error.check, f"{error}; compact_plan, asked again, declined: {reason}")
        return replace(outcome, check="declined", reason=reason)

    @staticmethod
    def data(plan_data: dict[str, Any], state: dict[str, Any], cut: int, reason: str) -> dict[str, Any]:
        """``compact_plan``'s data once more, told why: ``previous_attempt {cut, reason}``."""
        return {**plan_data, "state": state, "previous_attempt": {"cut": cut, "reason": reason}}


@dataclass
class Outcome:
    """The result of one compaction attempt (committed means: the caller should apply ``history``)."""

    committed: bool
    history: list[dict[str, Any]]
    reason: str = ""
    check: str | None = None
    """Why nothing was committed: ``declined`` or the name of the refusing check."""
    cut: int | None = None
    summary: str = ""
    comparable_before: int | None = None
    comparable_after: int | None = None
    after: BudgetCheck | None = None
    """The budget answer for the candidate: the request the agent sends next."""
    state: dict[str, Any] = field(default_factory=dict)
    backup: str | None = None
    focus_used: bool = False
    """The compactor reported that it used the ``focus`` it was given (``focus_used: true``)."""

    def refused(self, check: str, reason: str) -> Outcome:
        """This outcome, turned into a refusal by a later step (e.g. the save)."""
        return replace(self, committed=False, check=check, reason=reason)


@dataclass(frozen=True)
class Prepared:
    """A summary made ahead of the trigger (``prepare``): the cut it covers, the compactor's final
    summary and state for ``history[1:cut]``, and what it is valid for. Kept in memory only."""

    cut: int
    summary_ref: str
    summary: str
    state: dict[str, Any]
    retained_images: list[Any]
    prefix: str
    """Digest of ``history[:cut]`` (citations off): the prefix the summary covers."""
    model: str
    requests: int = 0
    """Summary requests it took (their tokens are in the cache module's counts)."""

    def valid_for(self, history: list[dict[str, Any]], model: str, focus: str | None = None) -> bool:
        """True while the prefix it summarises is unchanged, for the same model and no ``/compact``
        focus (a focus asks for another summary)."""
        return (
            focus is None
            and model == self.model
            and 2 <= self.cut < len(history)
            and prefix_digest(history, self.cut) == self.prefix
        )

    def offer(self) -> dict[str, Any]:
        """``compact_plan``'s ``prepared`` field."""
        return {"cut": self.cut, "summary_ref": self.summary_ref}

    def given(self) -> dict[str, Any]:
        """``before_compact``'s ``prepared`` field: the offer with the summary and the compactor's state."""
        return {**self.offer(), "summary": self.summary, "state": self.state}


def prefix_digest(history: list[dict[str, Any]], cut: int) -> str:
    """A digest of ``history[:cut]`` as the compaction hooks see it (without the recall citation)."""
    return digest([without_citation(message) for message in history[:cut]])


def summary_message(summary: str, images: list[dict[str, Any]] | None = None, citation: str = "") -> dict[str, Any]:
    """The untrusted user-role message that carries a compaction summary (and the images it keeps).

    ``citation`` (the archive's spans, ``archive.citation``) ends its text; ``without_citation``
    takes it off again before the next compaction's hooks read the summary.
    """
    text = f"{SUMMARY_INTRO}\n\n{summary}"
    if citation:
        text += f"\n\n{citation}"
    content: Any = [{"type": "text", "text": text}, *images] if images else text
    return {"role": "user", "content": content, "_compaction": summary_marker()}


def without_citation(message: dict[str, Any]) -> dict[str, Any]:
    """A summary message without the core's archive citation (it is rewritten at every compaction); a
    citation of an earlier core (which named the recall tool) is taken off too."""
    if not is_summary(message):
        return message
    content = message.get("content")
    for opening in (CITATION_OPEN, *LEGACY_CITATION_OPENS):
        cut = f"\n\n{opening}"
        if isinstance(content, str) and cut in content:
            return {**message, "content": content[: content.index(cut)]}
        if isinstance(content, list) and content and isinstance(content[0], dict):
            first = content[0].get("text")
            if isinstance(first, str) and cut in first:
                return {**message, "content": [{**content[0], "text": first[: first.index(cut)]}, *content[1:]]}
    return message


@dataclass
class Compactor:
    """Runs compaction transactions with exactly what they need: hooks, budget, model, config."""

    hooks: HookRunner
    budget: Budget
    model: ModelClient
    config: ApiConfig
    workspace: str
    tools: list[dict[str, Any]]
    context_state: dict[str, Any]
    progress: Callable[[str], None] = lambda _message: None
    cite: Callable[[list[dict[str, Any]]], str] = lambda _replaced: ""
    """The recall citation for the messages a candidate replaces (the caller archives them on commit)."""
    notice: Callable[[str], None] = lambda _message: None
    """A line the user must see (a summary that did not finish, planned again)."""
    focus: str | None = None
    """``/compact FOCUS``: sent as ``focus`` in ``compact_plan`` and ``before_compact`` (SPEC §3.4)."""
    prepared: Prepared | None = None
    """A summary made ahead of the trigger, offered to a compactor that declared ``prepared``."""
    request_meta: dict[str, Any] = field(default_factory=dict)
    """What each summary request's ``request_meta`` carries (``kind``, ``session``, ``prepared``)."""
    used: str | None = None
    """After ``run``: ``used`` / ``extended`` when the prepared summary went into the candidate."""
    sent: int = 0
    """Summary requests sent so far."""
    focus_used: bool = False
    """After ``run``: the compactor reported that it used ``focus`` (``focus_used: true``)."""

    def run(self, history: list[dict[str, Any]], check: BudgetCheck | None = None, *, force: bool = False) -> Outcome:
        """Try to compact ``history``; never raises for a declined or failed attempt. A refused worker
        (``WorkerIncompatible``: the handshake, or a budget whose estimates no reduction can pass)
        ends the run instead, in one line, with nothing committed."""
        outcome = Outcome(committed=False, history=history)
        try:
            _check_frame_size(history)
            if check is None:
                check = self.budget.check(history, self.tools, force=force)
            before = check.verdict.comparable_estimate if check is not None else None
            if check is None or before is None:
                raise CompactionError(
                    "no_budget", "no comparable pre-compaction estimate (is the budget module enabled?)"
                )
            outcome.comparable_before = before
            return self._attempt(history, check, force, outcome)
        except CompactionError as exc:
            return replace(outcome, check=exc.check, reason=str(exc))
        except WorkerIncompatible:  # a worker refused (hello, or a budget that cannot pass a check): ends the run
            raise
        except HookResultError as exc:  # a compactor broke the contract of its event: the check it broke
            return replace(outcome, check=exc.check or "worker_failed", reason=str(exc))
        except WorkerFailure as exc:
            return replace(outcome, check="worker_failed", reason=str(exc))
        except ModelError as exc:
            return replace(outcome, check="model_error", reason=f"the summary request failed: {exc}")

    def report(self, outcome: Outcome) -> str | None:
        """Send ``after_compact_commit`` (when subscribed); returns a warning when that hook failed."""
        if outcome.check == "no_budget":
            return None
        try:
            self.hooks.run(
                "after_compact_commit",
                {
                    "committed": outcome.committed,
                    "reason": outcome.reason,
                    "check": outcome.check,
                    "cut": outcome.cut,
                    "comparable_before": outcome.comparable_before,
                    "comparable_after": outcome.comparable_after,
                    "state": outcome.state,
                },
            )
        except WorkerFailure as exc:
            return f"compaction diagnostics were not recorded: {exc}"
        return None

    def _attempt(self, history: list[dict[str, Any]], check: BudgetCheck, force: bool, outcome: Outcome) -> Outcome:
        # 1-3: plan, checked. The core resets cut so that nothing can inherit one from the budget provider.
        # Hooks read summaries without the core's recall citation, which each commit writes anew.
        history = [without_citation(message) for message in history]
        plan_data = {**check.output, "history": history, "cut": None, "force": force, **self._focus()}
        offer = self._offer(history)
        if offer is not None:
            plan_data["prepared"] = offer.offer()
        plan: CompactPlan = self.hooks.checked("compact_plan", plan_data)
        replans = _Replans()
        while True:
            outcome.state, outcome.cut = plan.state, plan.cut
            if plan.cut is None:
                return replans.declined(outcome, plan.reason)
            cut = plan.cut
            replans.check_later(cut)
            try:
                candidate, summary = self._candidate(history, cut, plan.state, outcome, check, offer)
            except SummaryNotFinished as exc:
                if not self.hooks.declared("compact_plan", "previous_attempt"):
                    raise
                reason = replans.add(cut, SUMMARY_NOT_FINISHED, exc)
                self.notice(f"{exc}; the compactor plans again ({reason})")
                plan = self.hooks.checked("compact_plan", replans.data(plan_data, outcome.state, cut, reason))
                continue
            after = self.budget.check(candidate, self.tools)
            assert after is not None  # the budget module answered the first check
            outcome.comparable_after = after.verdict.comparable_estimate
            if after.verdict.fits:
                break
            # One more plan, told that this cut was too early; never more than once.
            error = CompactionError(
                "candidate_over_budget",
                f"the compacted history does not fit the context budget, even cut later: {after.verdict.explain()}",
            )
            if not self.hooks.declared("compact_plan", "previous_attempt"):
                raise error  # SPEC §3.5: a candidate that does not fit commits nothing
            reason = replans.add(cut, CANDIDATE_OVER_BUDGET, error)
            plan = self.hooks.checked("compact_plan", replans.data(plan_data, outcome.state, cut, reason))
        self._check_reduction(check, after, history, candidate)
        return replace(
            outcome,
            committed=True,
            history=candidate,
            summary=summary,
            after=after,
            reason=f"comparable estimate {outcome.comparable_before} -> {outcome.comparable_after}",
        )

    def _candidate(
        self,
        history: list[dict[str, Any]],
        cut: int,
        state: dict[str, Any],
        outcome: Outcome,
        check: BudgetCheck,
        offer: Prepared | None = None,
    ) -> tuple[list[dict[str, Any]], str]:
        summary, state, retained = self._summarise(history, cut, state, check, offer)
        outcome.focus_used = self.focus_used
        outcome.state = state
        # 6: candidate = system + untrusted summary + untouched suffix, snapshots restored.
        citation = self.cite(history[1:cut])
        candidate = [history[0], summary_message(summary, retained, citation), *history[cut:]]
        candidate = restore_snapshots(candidate, self.context_state)
        candidate = self.hooks.checked("before_compact_commit", {"messages": candidate, "cut": cut})
        try:
            validate_history(candidate)
        except HistoryError as exc:
            raise CompactionError("invalid_candidate", f"the compacted history is invalid: {exc}") from exc
        return candidate, summary

    def _focus(self) -> dict[str, str]:
        return {"focus": self.focus} if self.focus else {}

    def _summarise(
        self,
        history: list[dict[str, Any]],
        cut: int,
        state: dict[str, Any],
        check: BudgetCheck,
        offer: Prepared | None = None,
    ) -> tuple[str, dict[str, Any], list[Any]]:
        """Steps 4 and 5: the final summary of ``history[1:cut]``, the compactor's state and the
        images the summary message keeps."""
        # 4: prepare — a local summary, or prompts and transcripts for model summary requests.
        data: dict[str, Any] = {
            "messages": history[1:cut],
            "cut": cut,
            "state": state,
            "model": self.config.model,
            "budget": self.config.budget,
            "workspace": self.workspace,
            **self._overhead(check),
            **self._focus(),
        }
        if offer is not None and cut >= offer.cut:
            data["prepared"] = offer.given()
        prepared: PreparedSummary = self.hooks.checked("before_compact", data)
        self.focus_used = prepared.focus_used
        summary = self._summary_of(prepared, offer)
        # 5: post-process; after_compact may ask for further requests (bounded rounds).
        summary, state = self._post_process(summary, prepared.state)
        return summary, state, prepared.retained_images

    def _offer(self, history: list[dict[str, Any]]) -> Prepared | None:
        """The prepared summary, when it still covers this history's prefix for this model and the
        compactor declared ``prepared`` (an old one never sees the field: it compacts as before)."""
        prepared = self.prepared
        if prepared is None or not prepared.valid_for(history, self.config.model, self.focus):
            return None
        if not self.hooks.declared("compact_plan", PREPARED_EXTENSION):
            return None
        return prepared

    def _summary_of(self, answer: PreparedSummary, offer: Prepared | None) -> str:
        """``before_compact``'s local summary (the prepared one, when the compactor handed it back),
        or the model's, from requests that may extend the prepared summary (``extends``)."""
        self.used = None
        if answer.summary is not None:
            if offer is not None and answer.summary == offer.summary:
                self.used = "used"
            return answer.summary
        start: str | None = None
        if offer is not None and answer.extends is not None:
            if answer.extends != offer.summary_ref:
                raise CompactionError(
                    "summary_reply_invalid",
                    f"before_compact extends {answer.extends!r}, not the prepared summary {offer.summary_ref!r}",
                )
            start, self.used = offer.summary, "extended"
        return self._model_summary(answer, start)

    def prepare(
        self, history: list[dict[str, Any]], check: BudgetCheck, held: Prepared | None = None
    ) -> Prepared | None:
        """Steps 1 to 5 ahead of the trigger (``prepare``): the planner's cut now and its final
        summary, with nothing committed and no ``after_compact_commit``. None when the compactor
        declines, or when ``held`` (the summary prepared earlier) still covers this prefix up to the
        planner's cut or later: a new one is made only when the planner would now cut later, so that
        the trigger's compaction frees as much as one made then. A failure raises (nothing is kept)."""
        history = [without_citation(message) for message in history]
        # Planned as at the next turn's trigger: the history and the line the user is typing (an
        # empty user message stands for it), so that the cut is the one the trigger's plan chooses.
        plan_data = {**check.output, "history": [*history, NEXT_LINE], "cut": None, "force": True}
        plan: CompactPlan = self.hooks.checked("compact_plan", plan_data)
        if plan.cut is None or plan.cut >= len(history):
            return None
        if held is not None and held.valid_for(history, self.config.model) and plan.cut <= held.cut:
            return None
        summary, state, retained = self._summarise(history, plan.cut, plan.state, check)
        ref = digest([prefix_digest(history, plan.cut), self.config.model, summary])
        return Prepared(
            cut=plan.cut,
            summary_ref=ref,
            summary=summary,
            state=state,
            retained_images=list(retained),
            prefix=prefix_digest(history, plan.cut),
            model=self.config.model,
            requests=self.sent,
        )

    def _overhead(self, check: BudgetCheck) -> dict[str, Any]:
        """``summary_request_overhead`` for a compactor that declared it (SPEC §3.4): what the core's
        wrapper adds to each summary request, in bytes and at the budget's rate. Others get nothing
        and keep their own margin."""
        if not self.hooks.declared("before_compact", OVERHEAD_EXTENSION):
            return {}
        estimates = check.verdict.raw.get("cut_estimates")
        rate = estimates.get("tokens_per_byte") if isinstance(estimates, dict) else None
        if not isinstance(rate, (int, float)) or isinstance(rate, bool):
            rate = 1.0
        return {OVERHEAD_EXTENSION: request_overhead(float(rate)).as_json()}

    def _post_process(self, summary: str, state: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        for round_number in range(1, MAX_AFTER_COMPACT_ROUNDS + 1):
            revision: Revision = self.hooks.checked(
                "after_compact", {"summary": summary, "state": state, "round": round_number}
            )
            state = revision.state
            if revision.request is None:
                assert revision.summary is not None  # the checker's contract: a summary or a request
                return revision.summary, state
            if round_number == MAX_AFTER_COMPACT_ROUNDS:
                break
            request = summary_request(revision.request.prompt, revision.request.messages, summary)
            summary = self._send(request, f"revision {round_number}")
        raise CompactionError(
            "rounds_exceeded",
            f"after_compact asked for more than {MAX_AFTER_COMPACT_ROUNDS - 1} further summary requests",
        )

    def _model_summary(self, prepared: PreparedSummary, start: str | None = None) -> str:
        cap = min(prepared.max_tokens, self.config.max_tokens) if prepared.max_tokens is not None else None
        summary: str | None = start
        count = len(prepared.requests)
        for index, chunk in enumerate(prepared.requests):
            images = prepared.summary_images if index == count - 1 else None
            request = summary_request(chunk.prompt, chunk.messages, summary, images)
            summary = self._send(request, "summary" if count == 1 else f"part {index + 1} of {count}", cap)
        assert summary is not None  # the checker's contract: at least one request
        return summary

    def _send(self, request: list[dict[str, Any]], what: str, max_tokens: int | None = None) -> str:
        # Each summary request must fit too, counted without the (unused) tool schemas.
        check = self.budget.check(request, [], compact=False)
        if check is not None and not check.verdict.fits and check.verdict.provisional:
            # Nothing of this model's density is known yet: the byte estimate is several times the
            # real count, and the compactor packed the request by content. Let the server count.
            self.progress(f"the budget has no usage of this model yet; the server counts the summary request ({what})")
        elif check is not None and not check.verdict.fits:
            raise CompactionError(
                "summary_request_over_budget",
                f"the summary request ({what}) does not fit the context budget: {check.verdict.explain()}",
            )
        self.progress(f"summarising earlier conversation ({what})")
        self.sent += 1
        reply = self.model.complete(request, [], max_tokens=max_tokens, meta=self.request_meta or None)
        if reply.message.get("tool_calls"):
            raise CompactionError(
                "summary_reply_invalid", "the summary reply asked for tool calls; summaries must be plain text"
            )
        if reply.finish_reason != "stop":
            raise SummaryNotFinished(
                "summary_reply_invalid",
                f"the summary reply did not finish normally (finish reason {reply.finish_reason!r})",
            )
        text = reply.message.get("content")
        if not isinstance(text, str) or not text.strip():
            raise CompactionError("summary_reply_invalid", "the summary reply was empty")
        return text

    def _check_reduction(
        self, check: BudgetCheck, after: BudgetCheck, history: list[dict[str, Any]], candidate: list[dict[str, Any]]
    ) -> None:
        before, now = check.verdict, after.verdict
        if now.comparable_estimate is None or before.comparable_estimate is None:
            raise CompactionError("not_reducing", "the budget gave no comparable estimate for the compacted history")
        if now.comparable_estimate >= before.comparable_estimate:
            raise CompactionError(
                "not_reducing",
                f"the compacted history is not smaller (comparable estimate "
                f"{now.comparable_estimate} >= {before.comparable_estimate})",
            )
        # Seed 001 §7: a byte reduction may not pass for a token reduction. With real usage behind
        # the original, the candidate's conservative estimate must be below it too, measured like
        # with like: when the candidate was estimated another way (learned density, the server's
        # exact count), the original is measured that way as well (SPEC §3.5 step 6).
        if (
            before.estimate_method in ("usage_anchor", "exact_count")
            and before.estimate is not None
            and now.estimate is not None
            and now.estimate >= before.estimate
        ):
            same = self._measured_like(history, now.estimate_method)
            if same is not None:
                if now.estimate < same:
                    return
                raise CompactionError(
                    "not_reducing",
                    f"the compacted history is not smaller in tokens (estimate {now.estimate} >= {same} for the "
                    f"original, both by {now.estimate_method})",
                )
            problem = self._budget_cannot_reduce(history, candidate, before.estimate, now.estimate)
            if problem is not None:
                raise WorkerIncompatible(problem)
            raise CompactionError(
                "not_reducing",
                f"the compacted history is not smaller in tokens (estimate "
                f"{now.estimate} >= the anchored {before.estimate})",
            )

    def _measured_like(self, history: list[dict[str, Any]], method: str | None) -> int | None:
        """The original's estimate made the way the candidate's was (``method``), without the usage
        anchor; None when that way is the byte count (no token reduction may rest on bytes alone)."""
        if method in (None, "usage_anchor", "utf8_bytes"):
            return None
        same = self.budget.check(history, self.tools, compact=False, anchored=False)
        if same is None or same.verdict.estimate_method != method:
            return None
        return same.verdict.estimate

    def _budget_cannot_reduce(
        self, history: list[dict[str, Any]], candidate: list[dict[str, Any]], anchored: int, estimate: int
    ) -> str | None:
        """The one line that names the budget worker when a clear reduction fails the token check.

        A candidate of at most ``CLEAR_REDUCTION`` of the history's bytes is a real reduction at the
        density real usage counted for that history (with twice the room): when the budget still
        estimates it at the anchored count or more, no compaction can ever pass seed 001 §7's check
        with this budget, and a bare ``not_reducing`` would blame the compactor. None otherwise.
        """
        from .pool import describe_worker

        before = sum(wire_bytes(message) for message in history) + wire_bytes(self.tools)
        after = sum(wire_bytes(message) for message in candidate) + wire_bytes(self.tools)
        hooks = self.hooks.subscribers("context_budget")
        if not hooks or after > before * CLEAR_REDUCTION:
            return None
        hook = hooks[-1]
        handshakes = self.hooks.pool.handshakes
        said = handshakes.said(hook.exec) if handshakes is not None else None
        if said is not None and said.package:
            who = f"{said.package} {said.version or '(version unknown)'}"
        else:
            who = (
                "silent to hello, no package or version known" if said is None or not said.known else "no package named"
            )
        slot = f" for {hook.module!r}" if hook.module else ""
        return (
            f"worker {describe_worker(hook.exec, hook.module)} ({who}) estimates the compacted history "
            f"({after} bytes) at {estimate} tokens, not below the {anchored} tokens real usage counted for the "
            f"{before} bytes it replaces: its estimates cannot pass the token-reduction check (seed 001 §7), so no "
            f"compaction can commit with it; fix: bind a budget whose estimates follow real usage "
            f"(`i --runtime check budget` tests it) in bindings.json's entry{slot}; the last checkpoint is unchanged"
        )


def _check_frame_size(history: list[dict[str, Any]]) -> None:
    """Every compaction hook receives the whole history in one frame (at most 48 MiB)."""
    from i_protocol import MAX_FRAME_BYTES

    size = wire_bytes(history)
    if size + FRAME_HEADROOM > MAX_FRAME_BYTES:
        raise CompactionError(
            "too_large",
            f"the history is {size / 2**20:.1f} MiB, more than the "
            f"{MAX_FRAME_BYTES // 2**20} MiB frame every compaction hook must "
            "receive it in; it cannot be compacted. Start a new session (the "
            "session file and its backups stay as they are)",
        )


def describe(outcome: Outcome) -> str:
    """A one-line description of an outcome for the console."""
    if outcome.committed:
        return f"compacted: {outcome.reason}; previous history saved to {outcome.backup}"
    if outcome.check == "declined":
        return f"not compacted: {outcome.reason}"
    return f"compaction failed ({outcome.check}): {outcome.reason}"
