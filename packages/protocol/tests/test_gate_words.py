"""The secret table's gate-word lookup: the words a text holds, exactly as looking each one up
would find them, with one scan per group of words sharing a head (``pass``, ``gh``, ``gl``)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from i_protocol import secrets

WORDS = sorted({word for _, _, _, words, _ in secrets._GATE_GROUPS for word in words})
# Pieces that build near misses too: heads, their next characters, words cut and run together.
PIECES = [*WORDS, "pass", "passed", "gh", "gl", "ghx_", "gl-", "pas", "s", "w", "_", "-", " ", "\n", "ord", "é"]


def every_word_looked_up(lower: str) -> set[str]:
    return {word for word in WORDS if word in lower}


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_the_words_found_are_those_of_looking_each_one_up(pieces: list[str]) -> None:
    lower = "".join(pieces)
    assert secrets._gate_words_in(lower) == every_word_looked_up(lower)


def test_a_head_that_repeats_is_read_at_every_place() -> None:
    # "passpass_": the second head starts inside the first one's next character.
    lower = "passpass_ glglpat- ghgho_ " + "passed " * 500 + "password"
    assert secrets._gate_words_in(lower) == every_word_looked_up(lower)
    assert {"pass_", "password", "passw", "glpat-", "gho_"} <= secrets._gate_words_in(lower)
