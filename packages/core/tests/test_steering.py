"""The steering module: its queue contract, its injection by the console, and the approval rules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core.approval import ApprovalGate
from i_core.errors import WorkerFailure
from i_core.hook_results import CHECKS
from i_core.manifest import Manifest
from i_core.selection import with_steering
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

STEERING = [sys.executable, "-m", "i_core", "--runtime", "worker", "steering"]


def _entry(ident: str, text: str) -> bytes:
    return orjson.dumps({"id": ident, "text": text, "at": "2025-01-01T00:00:00Z"}) + b"\n"


@pytest.fixture
def steering(tmp_path):
    workers = []

    def start(queue: Path) -> WorkerProcess:
        worker = WorkerProcess.spawn(
            [*STEERING, "--queue", str(queue)], cwd=str(tmp_path), env={**os.environ}, name="steering"
        )
        workers.append(worker)
        return worker

    yield start
    for worker in workers:
        worker.close(grace=1.0)


SYSTEM = {"role": "system", "content": "sys"}


def test_before_turn_appends_pending_entries_and_after_save_acknowledges_them(steering, tmp_path):
    queue = tmp_path / "s.queue.jsonl"
    queue.write_bytes(_entry("a1", "first") + b"not json\n" + _entry("a2", "second") + b'{"id": "a3", "te')
    worker = steering(queue)
    data = worker.call("before_turn", {"messages": [SYSTEM, {"role": "user", "content": "go"}]})
    assert data["append"] == [
        {"role": "user", "content": "first", "_steering": "a1"},
        {"role": "user", "content": "second", "_steering": "a2"},
    ]  # the torn a3 waits
    saved = [SYSTEM, {"role": "user", "content": "go"}, *data["append"]]
    worker.call("after_save", {"messages": saved, "path": str(tmp_path / "s.json")})
    assert (tmp_path / "s.queue.jsonl.ack").read_text().split() == ["a1", "a2"]
    with queue.open("ab") as handle:
        handle.write(b'xt": "third", "at": ""}\n')
    again = worker.call("before_turn", {"messages": saved})
    assert again["append"] == [{"role": "user", "content": "third", "_steering": "a3"}]


def test_delivery_is_at_least_once_and_deduplicated_by_id(steering, tmp_path):
    queue = tmp_path / "s.queue.jsonl"
    queue.write_bytes(_entry("b1", "steer"))
    first = steering(queue)
    delivered = first.call("before_turn", {"messages": [SYSTEM]})["append"]
    first.kill()  # a crash before any checkpoint held it: nothing was acknowledged
    second = steering(queue)
    assert second.call("before_turn", {"messages": [SYSTEM]})["append"] == delivered  # delivered again
    # Already in the history (saved, but the ack was lost): not delivered twice.
    assert "append" not in second.call("before_turn", {"messages": [SYSTEM, *delivered]})
    # Appended by an earlier hook in the chain: kept once.
    chained = second.call("before_turn", {"messages": [SYSTEM], "append": delivered})
    assert chained["append"] == delivered


def test_the_worker_needs_its_queue_argument():
    done = subprocess.run(STEERING, capture_output=True, timeout=scaled(30))
    assert done.returncode == 2 and b"--queue PATH" in done.stderr


def test_the_console_injects_steering_last_and_a_binding_replaces_it_with_queue_appended(tmp_path, dirs):
    queue = tmp_path / "q.jsonl"
    empty = Manifest(tools=(), hooks=(), provider=None, source="test")
    injected = with_steering(empty, dirs["config"], queue)
    hook = injected.hooks[-1]
    assert hook.module == "steering" and hook.events == ("before_turn", "after_save")
    assert hook.exec.argv[1:] == ("-m", "i_core", "--runtime", "worker", "steering", "--queue", str(queue))
    replacement = tmp_path / "my-steering"
    replacement.write_text("#!/bin/sh\n")
    replacement.chmod(0o755)
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"steering": {"exec": [str(replacement), "-v"]}}))
    # plugins.json's "disabled" does not remove the console's steering.
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "approval", "disabled": ["steering"]}))
    bound = with_steering(empty, dirs["config"], queue)
    assert bound.hooks[-1].exec.argv == (str(replacement), "-v", "--queue", str(queue))


def _steering_messages(append):
    return CHECKS["before_turn"]({"append": append}, {}).append


def test_before_turn_append_accepts_only_user_text_with_an_id():
    assert _steering_messages(None) == []
    good = [{"role": "user", "content": "hi", "_steering": "x", "extra": 1}]
    assert _steering_messages(good) == [{"role": "user", "content": "hi", "_steering": "x"}]
    for bad in (
        [{"role": "assistant", "content": "hi", "_steering": "x"}],
        [{"role": "user", "content": "hi"}],
        [{"role": "tool", "content": "x", "_steering": "x", "tool_call_id": "c"}],
        "text",
    ):
        with pytest.raises(WorkerFailure):
            _steering_messages(bad)


class _Hooks:
    def __init__(self, decide=None):
        self.decide = decide
        self.seen: list[str] = []

    def checked(self, event, data):
        # Like HookRunner.checked: an event nobody handles gives back its own data's result.
        if event == "tool_approval" and self.decide is not None:
            self.seen.append(data["decision"])
            data = {**data, "decision": self.decide(data)}
        return CHECKS[event](data, data)


def _gate(hooks, answers):
    asked = []

    def ask(summary, detail=None):
        asked.append((summary, detail))
        return answers.pop(0)

    return ApprovalGate(hooks, ask, lambda prepared: f"diff of {prepared}"), asked


def test_a_allows_the_tool_for_the_session_but_the_policy_still_has_the_last_word():
    deny_second = iter(["ask", "deny"])
    hooks = _Hooks(lambda data: "deny" if next(deny_second) == "deny" else data["decision"])
    gate, asked = _gate(hooks, ["a"])
    assert gate.decide("edit", {}, False, "ask", "edit x", "P") is None
    assert asked == [("edit x", "diff of P")]
    assert gate.decide("edit", {}, False, "ask", "edit x", "P") == "denied by the approval policy: edit was not run"
    assert hooks.seen == ["ask", "allow"]  # the core proposed allow after "a"; the policy denied
    assert len(asked) == 1


def test_d_denies_the_tool_for_the_session_and_n_only_this_call():
    gate, asked = _gate(_Hooks(), ["n", "y", "d"])
    assert "declined" in gate.decide("shell", {}, False, "ask", "shell ls", None)
    assert gate.decide("shell", {}, False, "ask", "shell ls", None) is None
    assert "declined" in gate.decide("shell", {}, False, "ask", "shell ls", None)
    assert "denied shell for this session" in gate.decide("shell", {}, False, "ask", "shell ls", None)
    assert [detail for _summary, detail in asked] == [None, None, None]
    assert gate.decide("write", {}, False, "allow", "write y", None) is None  # other tools unaffected


def test_change_preview_is_a_bounded_unified_diff(tmp_path):
    from i_core.approval_prompt import change_preview
    from i_core.tools import ToolContext, prepare

    ctx = ToolContext(workspace=tmp_path)
    (tmp_path / "f.txt").write_text("".join(f"line {n}\n" for n in range(200)))
    edit = prepare("edit", {"path": "f.txt", "old_string": "line 5\n", "new_string": "LINE 5\n"}, ctx)
    diff = change_preview(edit).splitlines()
    assert diff[:2] == ["--- a/f.txt", "+++ b/f.txt"] and "-line 5" in diff and "+LINE 5" in diff
    whole = prepare("write", {"path": "f.txt", "content": "".join(f"new {n}\n" for n in range(200))}, ctx)
    lines = change_preview(whole).splitlines()
    assert len(lines) == 61 and lines[-1].startswith("… ") and lines[-1].endswith(" more lines")
    created = prepare("write", {"path": "new.txt", "content": "hello\x1b[2J\n"}, ctx)
    assert change_preview(created).splitlines()[-1] == "+hello\\x1b[2J"  # no raw escapes reach the terminal
    assert change_preview(prepare("read", {"path": "f.txt"}, ctx)) is None
