"""The state round-tripped through the core: typed, lossless for unknown keys, tolerant of old ones."""

from __future__ import annotations

from i_compact.state import STATE_SCHEMA, CompactState


def test_round_trip_keeps_every_key_including_unknown_ones() -> None:
    value = {
        "schema": 1,
        "worker": "i-worker-compact 0.2.4",
        "attempt": "abc",
        "forced": False,
        "policy": {"mode": "model"},
        "previous_summary": None,
        "budget": None,
        "cut": 5,
        "lastAttempt": {"status": "planned"},
        "future_key": {"anything": [1, 2]},
    }
    state = CompactState.from_json(value, "w")
    assert state.mode == "model" and state.cut == 5 and state.last_attempt == {"status": "planned"}
    assert state.extra == {"future_key": {"anything": [1, 2]}}
    assert state.to_json() == value


def test_missing_or_wrongly_typed_keys_take_their_defaults() -> None:
    state = CompactState.from_json(
        {"cut": "7", "sizes": [1], "ledger": 3, "cache_hit": 1, "summary_max_tokens": True, "request": "x"}, "w"
    )
    assert state.cut is None and state.sizes is None and state.ledger is None and state.cache_hit is None
    assert state.summary_max_tokens is None and state.request is None and state.mode is None
    assert state.to_json() == {}


def test_anything_but_an_object_gives_a_fresh_state() -> None:
    for value in (None, [], "state", 3):
        assert CompactState.from_json(value, "w").to_json() == {"schema": STATE_SCHEMA, "worker": "w"}
