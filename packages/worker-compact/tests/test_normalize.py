"""Canonical <continuation_summary> normalization (seed 002)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import normalize
from i_compact.normalize import normalize_summary

CANON = "<continuation_summary>\n{}\n</continuation_summary>"


def test_plain_text_is_wrapped() -> None:
    n = normalize_summary("  Task: fix tx_1\n")
    assert n.summary == CANON.format("Task: fix tx_1") and n.kind == "plain_text"


def test_fenced_block_is_unwrapped() -> None:
    n = normalize_summary("```xml\n<continuation_summary>\nbody\n</continuation_summary>\n```")
    assert n.summary == CANON.format("body") and n.kind == "wrapped_block"


def test_prose_around_block_is_dropped() -> None:
    n = normalize_summary(
        "Sure! Here is the summary:\n<continuation_summary>body</continuation_summary>\nHope it helps"
    )
    assert n.summary == CANON.format("body") and n.kind == "extracted_block"


def test_multiple_blocks_are_merged_into_one() -> None:
    n = normalize_summary(
        "<continuation_summary>a</continuation_summary>\n<CONTINUATION_SUMMARY >b</continuation_summary>"
    )
    assert n.summary == CANON.format("a\n\nb") and n.blocks == 2
    assert n.summary.count("<continuation_summary>") == 1


def test_malformed_tags_are_repaired() -> None:
    assert normalize_summary("<continuation_summary>\nbody without close").summary == CANON.format("body without close")
    assert normalize_summary("body</continuation_summary>").summary == CANON.format("body")
    n = normalize_summary("<continuation_summary\nbody continuation_summary>")
    assert n.summary == CANON.format("body") and n.kind == "repaired_tags"


def test_empty_bodies_normalize_to_empty() -> None:
    for text in (
        "",
        "   ",
        "<continuation_summary></continuation_summary>",
        "```\n```",
        "<continuation_summary>\n\n</continuation_summary>\n<continuation_summary> </continuation_summary>",
    ):
        assert normalize_summary(text).summary == ""


def test_lone_surrogates_do_not_crash() -> None:
    n = normalize_summary("state \ud800 ok")
    assert n.summary.encode("utf-8")
    assert "\ufffd" in n.summary


@given(st.text(max_size=200))
def test_any_text_gives_one_block_or_empty(text: str) -> None:
    n = normalize_summary(text)
    if n.summary:
        assert n.summary.count("<continuation_summary>") == 1
        assert n.summary.count("</continuation_summary>") == 1
        assert n.summary.startswith("<continuation_summary>\n") and n.summary.endswith("\n</continuation_summary>")
        n.summary.encode("utf-8")
        assert normalize_summary(n.summary).summary == n.summary  # idempotent


def test_text_after_a_nested_block_is_kept() -> None:
    # A model that quotes the previous summary inside its own: the outer block's text after the
    # inner one used to be lost (the first close tag ended the block).
    nested = (
        "<continuation_summary>\nNew work: tx_0042.\n<continuation_summary>\nOld: job_77abc.\n"
        "</continuation_summary>\nNext: run the tests on src/a.py.\n</continuation_summary>"
    )
    n = normalize_summary(nested)
    assert n.summary == CANON.format("New work: tx_0042.\n\nOld: job_77abc.\n\nNext: run the tests on src/a.py.")
    assert n.summary.count("<continuation_summary>") == 1 and n.kind == "wrapped_block"
    # A last block left open after a complete one keeps its text too.
    assert "b" in normalize_summary("<continuation_summary>a</continuation_summary><continuation_summary>b").body


_TAG_PARTS = ["<", "/", ">", " ", "\n", "x", "continuation_summary", "CONTINUATION_SUMMARY", "Continuation_Summary"]
_TAG_PARTS += [
    "cont\u0131nuation_summary",
    "continuation_\u017fummary",
    "cont\u0130nuation_summary",
    "continuation",
    "_summary",
    "é",
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_TAG_PARTS), max_size=12))
def test_a_text_the_prefilter_passes_over_holds_no_tag_fragment(parts: list[str]) -> None:
    text = "".join(parts)
    if not normalize.may_name_tag(text):
        assert normalize._FRAGMENT.search(text) is None
    assert (
        normalize._clean_body(text)
        == normalize._fold_blanks(normalize._strip_outer_fence(normalize._FRAGMENT.sub("", text).strip())).strip()
    )
