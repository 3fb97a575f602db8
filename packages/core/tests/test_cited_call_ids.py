"""The compact form a compaction summary cites tool call ids in: every id, runs compressed, reversible."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_core.call_ids import cite_ids, parse_cited_ids


@pytest.mark.parametrize(
    ("ids", "cited"),
    [
        ([], ""),
        (["call_1_0", "call_3_0"], "call_1_0, call_3_0"),
        ([f"call_0_{n}" for n in range(2, 41)], "call_0_{2..40}"),
        (["t1", "t2", "t3", "u1", "t4"], "t{1..3}, u1, t4"),
        (["1", "2", "3", "5"], "{1..3}, 5"),
        (["a9", "a10", "a11"], "a{9..11}"),
        (["c1", "c2"], "c1, c2"),  # a run starts at three ids
        (["call_007", "call_008", "call_009"], "call_007, call_008, call_009"),  # leading zeros stay whole
        (["x_1", "x_1", "x_2"], "x_1, x_1, x_2"),
        (["toolu_01AbC", "call_Xy9/+="], "toolu_01AbC, call_Xy9/+="),
        (
            ["call 7", "a, b", 'q"{1..2}"', "caf\udce9", "\u65e5"],
            '"call 7", "a, b", "q\\"{1..2}\\"", "caf\\udce9", "\\u65e5"',
        ),
    ],
)
def test_ids_are_cited_compactly_and_read_back_exactly(ids: list[str], cited: str) -> None:
    assert cite_ids(ids) == cited
    assert parse_cited_ids(cited) == ids


@given(
    st.lists(
        st.one_of(
            st.from_regex(r"call_[0-9]{1,3}", fullmatch=True),
            st.from_regex(r"[a-z]{0,3}_?(0|[1-9][0-9]{0,2})", fullmatch=True),
            st.text(min_size=1, max_size=8),
        ),
        max_size=30,
    )
)
def test_any_ids_round_trip(ids: list[str]) -> None:
    text = cite_ids(ids)
    assert parse_cited_ids(text) == ids
    assert len(text) <= sum(len(cite_ids([i])) + 2 for i in ids)  # never longer than one by one


def test_a_numbered_series_shrinks_to_one_run() -> None:
    ids = [f"call_0_{n}" for n in range(2, 302)]
    assert cite_ids(ids) == "call_0_{2..301}"


@pytest.mark.parametrize("text", ["a,b", "a, ", "{3..1}", '"open', "a b", "x{1..}"])
def test_text_not_in_the_form_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cited_ids(text)
