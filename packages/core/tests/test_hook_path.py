"""The hook path, from HookRunner through the pool to a worker and back.

Most tests run the pool on in-process workers (``spawn=``): the real ``i_protocol.Worker``
dispatch and the real framing both ways, no subprocess. The last ones run the same failure
through a real worker process.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from i_core.errors import EXIT_WORKER, HookResultError, WorkerFailure
from i_core.hook_results import ToolResult
from i_core.hooks import HookRunner
from i_core.manifest import Exec, HookEntry, Manifest, ToolEntry
from i_core.pool import WorkerPool
from i_protocol import CallError, CallTimeout, ErrorFrame, Worker, WorkerError, encode_frame, paths_from_env
from i_protocol.host import parse_response

BUDGET = Exec(argv=("/opt/i/bin/i-budget", "--quiet"), cwd="/")
COMPACT = Exec(argv=("/opt/i/bin/i-compact",), cwd="/")
WEB = Exec(argv=("/opt/i/bin/i-web",), cwd="/")
HISTORY = [
    {"role": "system", "content": "s"},
    {"role": "user", "content": "u1"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "r"},
    {"role": "user", "content": "u2"},
]


class InProcessWorker:
    """A worker in this process with the host's interface: frames are encoded, handled, parsed."""

    def __init__(self, worker: Worker, name: str, hang: bool = False) -> None:
        self.worker = worker
        self.name = name
        self.hang = hang
        self.broken = self.killed = self.closed = False
        self.timeouts: list[float] = []
        self._next_id = 1

    @property
    def alive(self) -> bool:
        return not (self.broken or self.killed or self.closed)

    def call(self, event, data, *, context=None, timeout=15.0):
        self.timeouts.append(timeout)
        request_id, self._next_id = self._next_id, self._next_id + 1
        try:
            if self.hang:
                raise CallTimeout(f"did not answer within the deadline of {timeout:g} s")
            line = self.worker.handle_line(
                encode_frame({"id": request_id, "event": event, **(context or {}), "data": data})
            )
            return parse_response(line, request_id)
        except CallError as exc:
            self.broken, exc.worker = True, self.name
            raise

    def kill(self) -> None:
        self.killed = True

    def close(self, grace: float = 2.0) -> None:
        self.closed = True


def budget_worker() -> Worker:
    worker = Worker("budget", "1.0", dist_name="i-worker-budget")

    @worker.hook("context_budget")
    def context_budget(data, request):
        if data.get("broken_settings"):
            raise WorkerError("budget.json: 'threshold' must be a number between 0 and 1, got 'high'")
        return {**data, "budget_result": {"fits": True, "estimate": 10}, "cut": 3}

    return worker


def compact_worker(cut) -> Worker:
    worker = Worker("compact", "1.0", dist_name="i-worker-compact")

    @worker.hook("compact_plan")
    def compact_plan(data, request):
        return {**data, "cut": cut, "state": {"seen": len(data["history"])}}

    @worker.hook("before_save")
    def before_save(data, request):
        return {**data, "messages": data["messages"][cut:]}  # the system message is cut away

    return worker


def web_worker() -> Worker:
    worker = Worker("web", "1.0", dist_name="i-worker-web")

    @worker.tool("fetch")
    def fetch(arguments, request):
        return {"output": "<html>", "images": []}

    return worker


class BareAnswer(InProcessWorker):
    """Answers every call with ``answer``: what a worker not built on i_protocol could send."""

    def __init__(self, answer: dict) -> None:
        super().__init__(Worker("bare", "1.0"), "bare")
        self.answer = answer

    def call(self, event, data, *, context=None, timeout=15.0):
        return self.answer


@pytest.fixture
def started(dirs):
    """spawn= for the pool: Exec -> a fresh in-process worker; every one started is kept."""
    workers: list[InProcessWorker] = []
    factories = {BUDGET: budget_worker, COMPACT: lambda: compact_worker(3), WEB: web_worker}

    def spawn(spec: Exec) -> InProcessWorker:
        worker = InProcessWorker(factories[spec](), name=Path(spec.argv[0]).name)
        workers.append(worker)
        return worker

    spawn.workers = workers
    return spawn


def runner(spawn, *hooks: HookEntry, tools: tuple[ToolEntry, ...] = ()) -> HookRunner:
    manifest = Manifest(tools=tools, hooks=hooks, provider=None, source="test")
    return HookRunner(manifest, WorkerPool(paths_from_env(), spawn=spawn, deadline=3.0), {})


def test_an_error_frame_is_one_failure_naming_event_worker_and_cause_once(started):
    hooks = runner(started, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    with pytest.raises(WorkerFailure) as info:
        hooks.run("context_budget", {"broken_settings": True})
    message = str(info.value)
    assert message == (
        "hook failed on 'context_budget': worker budget (/opt/i/bin/i-budget --quiet) answered with an error: "
        "budget.json: 'threshold' must be a number between 0 and 1, got 'high'"
    )
    assert info.value.exit_code == EXIT_WORKER
    cause = info.value.__cause__
    assert isinstance(cause, ErrorFrame) and cause.worker == "i-budget"  # the host's error, kept as the cause
    assert not isinstance(info.value, HookResultError)


def test_a_failed_worker_is_evicted_and_the_next_call_starts_a_fresh_one(started):
    hooks = runner(started, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    with pytest.raises(WorkerFailure):
        hooks.run("context_budget", {"broken_settings": True})
    first = started.workers[0]
    assert first.killed and hooks.pool.running() == []
    answer = hooks.run("context_budget", {})  # no replay: only this new call reaches the new worker
    assert answer["budget_result"]["fits"] is True
    assert len(started.workers) == 2 and hooks.pool.running() == [started.workers[1]]


def test_a_timeout_names_the_deadline_the_pool_gave(started):
    def hanging(spec):
        worker = InProcessWorker(budget_worker(), "i-budget", hang=True)
        started.workers.append(worker)
        return worker

    hooks = runner(hanging, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    with pytest.raises(
        WorkerFailure,
        match=r"^hook failed on 'context_budget': worker budget \(.+\) did not answer within the deadline of 3 s$",
    ):
        hooks.run("context_budget", {})
    assert started.workers[0].timeouts == [3.0]


def test_a_worker_that_cannot_start_is_reported_by_its_first_call(started):
    def unstartable(spec):
        raise CallError("could not be started: No such file or directory", worker="i-budget")

    hooks = runner(unstartable, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    hooks.pool.start([BUDGET])  # the start-up failure waits for a call that has a context
    with pytest.raises(
        WorkerFailure, match=r"^hook failed on 'context_budget': worker budget \(.+\) could not be started"
    ):
        hooks.run("context_budget", {})


def test_an_event_nobody_handles_hands_back_its_own_data_without_a_call(started):
    hooks = runner(started, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    data = {"messages": HISTORY}
    assert hooks.run("before_save", data) is data
    assert hooks.checked("tool_approval", {"decision": "ask"}) == "ask"
    assert hooks.checked("before_save", data) is HISTORY  # the core's own history is not validated again
    assert started.workers == []


def test_checked_names_the_hook_whose_answer_breaks_the_contract(started):
    hooks = runner(started, HookEntry(events=("compact_plan",), exec=COMPACT, module="compact"))
    with pytest.raises(HookResultError) as info:
        hooks.checked("compact_plan", {"history": HISTORY, "cut": None})
    assert str(info.value) == (
        "hook failed on 'compact_plan': worker compact (/opt/i/bin/i-compact) returned cut 3, a 'tool' message "
        "inside a tool batch; it must be a user or assistant message"
    )
    assert info.value.check == "invalid_cut"
    assert info.value.exit_code == EXIT_WORKER


def test_checked_checks_every_answer_of_a_chain_and_blames_the_one_that_broke_it(started):
    first = HookEntry(events=("compact_plan", "before_save"), exec=BUDGET, module="budget")
    second = HookEntry(events=("before_save",), exec=COMPACT, module="compact")
    hooks = runner(started, first, second)
    with pytest.raises(
        HookResultError,
        match=r"^hook failed on 'before_save': worker compact \(.+\) returned an invalid history: history\[0\]: .+; "
        r"nothing was saved$",
    ):
        hooks.checked("before_save", {"messages": HISTORY, "path": "/s.json"}, consequence="nothing was saved")


def test_checked_returns_the_typed_result_of_the_last_answer(started):
    hooks = runner(started, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    check = hooks.checked("context_budget", {"history": HISTORY})
    assert check.verdict.fits is True and check.verdict.estimate == 10
    assert check.output["cut"] is None  # a budget provider never pre-selects a cut


def test_a_tool_answer_without_text_output_names_the_tool_and_its_worker(started):
    fetch = ToolEntry(name="fetch", description="d", parameters={}, exec=WEB, module="web")
    assert runner(started, tools=(fetch,)).tool("fetch", {}) == ToolResult("<html>", [])
    hooks = runner(lambda spec: BareAnswer({"output": None}), tools=(fetch,))
    with pytest.raises(
        HookResultError, match=r"^tool 'fetch' failed: worker web \(/opt/i/bin/i-web\) returned no text output$"
    ):
        hooks.tool("fetch", {})
    with pytest.raises(WorkerFailure, match="unknown tool 'nope'"):
        hooks.tool("nope", {})


def test_a_closed_pool_refuses_calls(started):
    hooks = runner(started, HookEntry(events=("context_budget",), exec=BUDGET, module="budget"))
    hooks.run("context_budget", {})
    hooks.pool.close()
    assert started.workers[0].closed
    with pytest.raises(WorkerFailure, match="the worker pool is closed"):
        hooks.run("context_budget", {})


# -- the same failure through a real worker process -------------------------------------------------

ERROR_FRAME_WORKER = """
import sys
from i_protocol import Worker, WorkerError
worker = Worker("budget", "1.0", dist_name="i-worker-budget")

@worker.hook("context_budget")
def context_budget(data, request):
    sys.stderr.write("a log line that must not be shown for an error frame\\n")
    raise WorkerError("budget.json: 'threshold' must be a number between 0 and 1, got 'high'")

sys.exit(worker.main())
"""


def test_a_real_worker_error_frame_is_one_failure_with_its_cause(dirs, tmp_path):
    script = tmp_path / "budget_errors.py"
    script.write_text(ERROR_FRAME_WORKER)
    spec = Exec(argv=(sys.executable, str(script)), cwd=str(tmp_path))
    pool = WorkerPool(paths_from_env())
    hooks = HookRunner(
        Manifest(
            tools=(),
            hooks=(HookEntry(events=("context_budget",), exec=spec, module="budget"),),
            provider=None,
            source="t",
        ),
        pool,
        {},
    )
    try:
        with pytest.raises(WorkerFailure) as info:
            hooks.run("context_budget", {})
    finally:
        pool.close()
    assert str(info.value) == (
        f"hook failed on 'context_budget': worker budget ({sys.executable} {script}) answered with an error: "
        "budget.json: 'threshold' must be a number between 0 and 1, got 'high'"
    )
    assert isinstance(info.value.__cause__, ErrorFrame)
    assert info.value.__cause__.worker == "budget_errors.py"
