"""The next compaction's summary prepared while the user reads (config.json ``prepare``): the real
console on a pseudo-terminal, the real budget and compact workers, the scripted model over HTTP."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from stall import FILLER, SUMMARY_TEXT, Console, ModelLog, config, responder

from i_core.compaction import Prepared, prefix_digest
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="pseudo-terminals are POSIX")


def _session(project: Path) -> dict[str, Any]:
    return orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())


def _summaries(project: Path) -> list[dict[str, Any]]:
    return [m for m in _session(project)["messages"] if isinstance(m.get("_compaction"), dict)]


def _wait(predicate: Any, seconds: float = 30) -> None:
    end = time.monotonic() + scaled(seconds)
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(0.05)


def _four_turns(console: Console, log: ModelLog) -> Any:
    """The turns before the trigger (the fifth turn compacts; preparation starts after the third),
    typed without a pause; then a predicate: a summary request came after the fourth turn ended."""
    console.prompt()
    for n in range(4):
        _, compacted = console.turn(f"turn {n}: {FILLER}")
        assert not compacted
    ended = time.monotonic()
    return lambda: any(at >= ended for at in log.summaries())


@pytest.fixture
def setup(plugins, dirs, project, env):
    plugins("compact")

    def start(model: ScriptedModel, prepare: str = "auto") -> Console:
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config(model.base_url, prepare)))
        return Console(project, env)

    return start


def test_the_compacting_turn_uses_the_summary_prepared_while_the_user_read(setup, project):
    log = ModelLog()
    with ScriptedModel([responder(log, 0.0, 0.5)] * 40, context_window=9000) as model:
        console = setup(model)
        try:
            prepared = _four_turns(console, log)
            _wait(prepared)  # prepared after turn 4, while nobody typed
            time.sleep(scaled(1.5))  # the summary's reply and after_compact
            asked = len(model.requests)
            _, compacted = console.turn(f"turn 4: {FILLER}")
            assert compacted
            assert len(model.requests) == asked + 1, "the compacting turn sent a summary request of its own"
            console.turn("and one more")
            assert console.close() == 0
        finally:
            console.kill()
    assert len(log.summaries()) >= 1
    summaries = _summaries(project)
    assert len(summaries) == 1 and "keep counting turns" in summaries[0]["content"]
    assert summaries[0]["content"].count("<continuation_summary>") == 1
    assert (project / ".i" / "sessions" / "s.precompact.json").exists()


def test_a_prepared_summary_whose_candidate_no_longer_fits_is_not_used(setup, project):
    log = ModelLog()
    with ScriptedModel([responder(log, 0.0, 0.2)] * 40, context_window=12000) as model:
        console = setup(model)
        try:
            prepared = _four_turns(console, log)
            _wait(prepared)
            time.sleep(scaled(1.5))
            asked = len(model.requests)
            # A long line (~3.6 x FILLER): the candidate at the prepared cut is over the capacity by
            # the budget's estimate, so the plan cuts later and that prefix is summarised now.
            since = len(console.seen)
            _, compacted = console.turn(f"turn 4: {FILLER * 3}{FILLER[: len(FILLER) * 6 // 10]}")
            assert compacted, console.seen[since:].decode(errors="replace")[-800:]
            assert len(model.requests) == asked + 2, "the prepared summary was used although it did not fit"
            assert console.close() == 0
        finally:
            console.kill()
    assert len(_summaries(project)) == 1


def test_prepare_off_makes_the_summary_at_the_trigger_as_before(setup, project):
    log = ModelLog()
    with ScriptedModel([responder(log, 0.0, 0.2)] * 40, context_window=9000) as model:
        console = setup(model, prepare="off")
        try:
            _four_turns(console, log)
            time.sleep(scaled(1.5))
            assert not log.summaries()  # nothing made ahead
            asked = len(model.requests)
            _, compacted = console.turn(f"turn 4: {FILLER}")
            assert compacted and len(model.requests) == asked + 2  # the summary, then the turn
            assert console.close() == 0
        finally:
            console.kill()
    assert len(_summaries(project)) == 1


def _slow_summaries(log: ModelLog, slow: list[bool]):
    """While ``slow[0]``, a summary request takes 60 s (a busy single-slot server); then 0.1 s."""
    quick = responder(log, 0.0, 0.1)

    def step(request: dict[str, Any]) -> dict[str, Any]:
        answer = quick(request)
        if not request.get("tools") and slow[0]:
            answer = {**answer, "delay": 60}
        return answer

    return step


def test_a_new_line_during_preparation_does_not_wait_for_the_summary_request(setup, project):
    log, slow = ModelLog(), [True]
    with ScriptedModel([_slow_summaries(log, slow)] * 40, context_window=9000) as model:
        console = setup(model)
        try:
            prepared = _four_turns(console, log)
            _wait(prepared)  # the preparation's summary request is in flight (for 60 s)
            slow[0] = False
            seconds, compacted = console.turn(f"turn 4: {FILLER}")
            assert seconds < scaled(20), f"the user's turn waited {seconds:.1f} s for the preparation"
            assert compacted  # compacted in the foreground, with a summary of its own
            assert len(log.summaries()) >= 2
            _, compacted = console.turn("and one more")
            assert console.close() == 0
        finally:
            console.kill()
    assert len(_summaries(project)) == 1


def test_ctrl_c_during_preparation_stops_it_and_the_next_turn_works(setup, project):
    log, slow = ModelLog(), [True]
    with ScriptedModel([_slow_summaries(log, slow)] * 40, context_window=9000) as model:
        console = setup(model)
        try:
            prepared = _four_turns(console, log)
            _wait(prepared)
            slow[0] = False
            before = (project / ".i" / "sessions" / "s.json").read_bytes()
            since = len(console.seen)
            time.sleep(0.3)
            started = time.monotonic()
            console.send(b"\x03")
            console.until(b"Ctrl-C again to exit", since, seconds=scaled(20))
            assert time.monotonic() - started < scaled(10)
            assert (project / ".i" / "sessions" / "s.json").read_bytes() == before
            _, compacted = console.turn(f"turn 4: {FILLER}")
            assert compacted, console.seen[since:].decode(errors="replace")[-1500:]
            assert console.close() == 0
        finally:
            console.kill()
    assert len(_summaries(project)) == 1


def test_sigkill_during_preparation_leaves_the_session_as_the_last_turn_saved_it(setup, project):
    log, slow = ModelLog(), [True]
    session = project / ".i" / "sessions" / "s.json"
    with ScriptedModel([_slow_summaries(log, slow)] * 40, context_window=9000) as model:
        console = setup(model)
        try:
            prepared = _four_turns(console, log)
            _wait(prepared)
            slow[0] = False
            before = session.read_bytes()
            console.kill()
        finally:
            console.kill()
        assert session.read_bytes() == before
        assert not (project / ".i" / "sessions" / "s.precompact.json").exists()
        assert len(orjson.loads(before)["messages"]) == 9
        again = setup(model)
        try:
            again.prompt()
            _, compacted = again.turn(f"turn 3: {FILLER}")
            assert compacted
            assert again.close() == 0
        finally:
            again.kill()
    assert len(_summaries(project)) == 1


OLD_COMPACTOR = """
import sys
from i_compact.worker import worker
# A compactor of before the extension: it never declares prepared (and so never sees the field).
worker.extensions = tuple(name for name in worker.extensions if name != "prepared")
sys.exit(worker.run())
"""


def test_an_old_compactor_without_the_prepared_field_compacts_as_today(setup, project, dirs, tmp_path):
    script = tmp_path / "old_compactor.py"
    script.write_text(OLD_COMPACTOR)
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"compact": {"exec": [sys.executable, str(script)]}}))
    log = ModelLog()
    with ScriptedModel([responder(log, 0.0, 0.2)] * 40, context_window=9000) as model:
        console = setup(model)
        try:
            _four_turns(console, log)
            time.sleep(scaled(1.5))
            assert not log.summaries()  # nothing prepared for a compactor that could not use it
            asked = len(model.requests)
            _, compacted = console.turn(f"turn 4: {FILLER}")
            assert compacted and len(model.requests) == asked + 2
            assert console.close() == 0
        finally:
            console.kill()
    summaries = _summaries(project)
    assert len(summaries) == 1 and SUMMARY_TEXT.splitlines()[2] in summaries[0]["content"]


def test_a_prepared_summary_is_valid_only_for_its_unchanged_prefix_and_model():
    history = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]
    made = Prepared(3, "ref", "summary", {}, [], prefix_digest(history, 3), "m")
    longer = [*history, {"role": "assistant", "content": "d"}]
    assert made.valid_for(history, "m") and made.valid_for(longer, "m")
    assert not made.valid_for(longer, "other-model")
    assert not made.valid_for(longer, "m", focus="the tests")
    edited = [history[0], {"role": "user", "content": "a, edited"}, *longer[2:]]
    assert not made.valid_for(edited, "m")
    assert not made.valid_for(history[:3], "m")  # the cut is no longer inside the history
