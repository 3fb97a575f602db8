"""Prefix classification (new/append/reset/compact) and the in-memory append fast path."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_cache import fingerprint
from i_cache.fingerprint import PrefixTracker, PreviousPrefix, prompt_parts


def conversation(n: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "sys"}]
    for i in range(n):
        messages.append({"role": "user", "content": f"u{i}"})
        messages.append({"role": "assistant", "content": f"a{i}"})
    return messages


def persisted(result: fingerprint.Classified) -> PreviousPrefix:
    start, tail = result.tail()
    system = fingerprint.message_digest(result.memory.items[0] if result.memory.items else None).hex()
    return PreviousPrefix(result.messages, result.fingerprint, result.header, system, start, tuple(tail))


def run(tracker: PrefixTracker, messages: list[dict[str, Any]], prev: PreviousPrefix | None) -> fingerprint.Classified:
    # A fresh parse, as each request arrives as new JSON objects.
    body = orjson.loads(orjson.dumps({"messages": messages}))
    return tracker.classify("s", prompt_parts("openai", body), prev)


def test_first_request_is_new_then_append() -> None:
    tracker = PrefixTracker()
    first = run(tracker, conversation(3), None)
    assert first.classification == "new"
    second = run(tracker, conversation(4), persisted(first))
    assert second.classification == "append"
    assert second.common == first.messages


def test_append_hashes_only_the_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    tracker = PrefixTracker()
    first = persisted(run(tracker, conversation(50), None))
    calls: list[object] = []
    real = fingerprint.message_digest
    monkeypatch.setattr(fingerprint, "message_digest", lambda m: calls.append(m) or real(m))
    second = run(tracker, conversation(51), first)
    assert second.classification == "append"
    # Two new messages plus the header (tools) object: never the 101 earlier messages.
    assert len(calls) == 3
    assert second.hashed == 2


def test_cold_worker_still_recognises_append_from_the_persisted_fingerprint() -> None:
    first = run(PrefixTracker(), conversation(5), None)
    again = run(PrefixTracker(), conversation(6), persisted(first))
    assert again.classification == "append"
    # The rolling chain equals the one a full hash computes.
    warm = PrefixTracker()
    run(warm, conversation(5), None)
    assert run(warm, conversation(6), persisted(first)).fingerprint == again.fingerprint


def test_changed_earlier_message_is_not_append_and_nothing_surviving_is_reset() -> None:
    tracker = PrefixTracker()
    first = run(tracker, conversation(3), None)
    other = [{"role": "system", "content": "sys"}, {"role": "user", "content": "a different task"}]
    assert run(tracker, other, persisted(first)).classification == "reset"


def test_edit_deep_inside_a_message_breaks_the_append() -> None:
    tracker = PrefixTracker()
    messages = conversation(3)
    first = run(tracker, messages, None)
    edited = [*copy.deepcopy(messages), {"role": "user", "content": "more"}]
    edited[2]["content"] = "a0 changed"
    result = run(tracker, edited, persisted(first))
    assert result.classification != "append"


@pytest.mark.parametrize("cold", [False, True])
def test_compaction_shape_is_compact(cold: bool) -> None:
    tracker = PrefixTracker()
    before = conversation(10)
    first = run(tracker, before, None)
    cut = 15
    after = [before[0], {"role": "user", "content": "<continuation_summary>...</continuation_summary>"}, *before[cut:]]
    after.append({"role": "user", "content": "go on"})
    result = run(PrefixTracker() if cold else tracker, after, persisted(first))
    assert result.classification == "compact"


def test_tools_change_breaks_the_prefix() -> None:
    tracker = PrefixTracker()
    body = {"messages": conversation(2), "tools": [{"type": "function", "function": {"name": "a"}}]}
    first = tracker.classify("s", prompt_parts("openai", body), None)
    body2 = {"messages": conversation(3), "tools": [{"type": "function", "function": {"name": "b"}}]}
    assert tracker.classify("s", prompt_parts("openai", body2), persisted(first)).classification == "reset"


def test_stale_memory_is_dropped_when_another_process_moved_the_stream_on() -> None:
    mine, theirs = PrefixTracker(), PrefixTracker()
    first = run(mine, conversation(2), None)
    # Another worker appended twice; the persisted state now differs from my memory.
    second = run(theirs, conversation(3), persisted(first))
    third = run(theirs, conversation(4), persisted(second))
    result = run(mine, conversation(5), persisted(third))
    assert result.classification == "append"
    assert result.common == third.messages


def test_prompt_parts_per_protocol() -> None:
    anthropic = prompt_parts("anthropic", {"system": "S", "messages": [{"role": "user", "content": "x"}]})
    assert anthropic.system == "S" and len(anthropic.items) == 1
    responses = prompt_parts("responses", {"instructions": "I", "input": "hello"})
    assert responses.system == "I" and responses.items == ["hello"]
    chat = prompt_parts("deepseek", {"messages": [{"role": "user", "content": "x"}]})
    assert chat.system is None


_message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "tool"]), "content": st.text(max_size=8)}
)


@given(st.lists(_message, max_size=12), st.lists(_message, max_size=4))
def test_warm_and_cold_paths_agree(history: list[dict[str, Any]], added: list[dict[str, Any]]) -> None:
    start = [{"role": "system", "content": "sys"}, *history]
    warm = PrefixTracker()
    first = persisted(run(warm, start, None))
    hot = run(warm, start + added, first)
    cold = run(PrefixTracker(), start + added, first)
    assert hot.classification == cold.classification == "append"
    assert hot.fingerprint == cold.fingerprint
