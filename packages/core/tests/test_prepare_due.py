"""When the console prepares the next compaction's summary (``prepare.due``)."""

from __future__ import annotations

from i_core.prepare import PREPARE_SHARE, due


def test_prepared_when_the_next_turn_growing_like_the_last_reaches_the_trigger() -> None:
    trigger = 6400
    assert not due(4632, trigger, 3532)  # 72% of the trigger, but the next turn ends at 5732
    assert due(5732, trigger, 4632)  # the next turn, as large as the last, reaches 6832
    assert due(6500, trigger, None)  # past the trigger already (a compaction that did not commit)


def test_never_below_the_share_and_no_growth_after_a_compaction() -> None:
    trigger = 10000
    assert not due(int(PREPARE_SHARE * trigger) - 1, trigger, 0)  # a giant last turn, still too early
    assert not due(8000, trigger, 9000)  # the estimate fell (a compaction): no growth to count on
    assert not due(8000, trigger, None)
