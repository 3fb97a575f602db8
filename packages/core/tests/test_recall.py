"""The ``recall`` built-in tool: spans, tool call ids, masking, parts within the budget, clear refusals."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from i_core.archive import Generation
from i_core.tools import BUILTIN_NAMES, FREE_TOOLS, ToolContext, ToolError, execute, prepare
from i_core.tools.recall import PART_TEXT


def context(tmp_path: Path, generations: list[Generation] | None, **extra) -> ToolContext:
    archived = None if generations is None else (lambda: generations)
    return ToolContext(workspace=tmp_path, archived=archived, **extra)


def recall(ctx: ToolContext, **arguments) -> str:
    return execute(prepare("recall", arguments, ctx), ctx).output


def lines_of(output: str) -> dict[int, dict]:
    found = {}
    for line in output.splitlines()[1:]:
        if line.startswith("[span "):
            number, _, body = line.removeprefix("[span ").partition("] ")
            found[int(number)] = orjson.loads(body)
    return found


MESSAGES = [
    {"role": "user", "content": "find the config"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "call_a", "type": "function", "function": {"name": "read", "arguments": "{}"}}],
    },
    {"role": "tool", "tool_call_id": "call_a", "content": "port = 8080\nDB_PASS=S3cret_99\n"},
    {"role": "assistant", "content": "the port is 8080"},
]


def test_recall_is_a_free_built_in(tmp_path: Path) -> None:
    assert "recall" in BUILTIN_NAMES and "recall" in FREE_TOOLS


def test_a_span_returns_the_exact_messages_numbered(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 5, MESSAGES[:2]), Generation(2, 7, MESSAGES[2:])])
    out = recall(ctx, span="5-6")
    assert out.splitlines()[0] == "archived messages 5-6:"
    assert lines_of(out) == {5: MESSAGES[0], 6: MESSAGES[1]}
    assert lines_of(recall(ctx, span=" 8 ")) == {8: MESSAGES[3]}
    assert set(lines_of(recall(ctx, span="6\u20137"))) == {6, 7}  # the en dash the summary prints


def test_a_tool_call_id_returns_the_call_and_its_result_with_secrets_masked(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 1, MESSAGES)])
    out = recall(ctx, tool_call_id="call_a")
    found = lines_of(out)
    assert set(found) == {2, 3}
    assert "S3cret_99" not in out and "[REDACTED:" in found[3]["content"]
    assert "port = 8080" in found[3]["content"]
    assert out.splitlines()[-1] == "[1 value(s) that look like secrets are masked]"


def test_a_span_partly_outside_the_archive_says_what_is_recallable(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(3, 20, MESSAGES)])
    out = recall(ctx, span="18-21")
    assert "(2 of them are not in the archive; recallable: 20-23)" in out.splitlines()[0]
    with pytest.raises(ToolError, match=r"span 1-5 is not in the archive; recallable: 20-23"):
        recall(ctx, span="1-5")
    with pytest.raises(ToolError, match=r"no archived message made or answered tool call 'call_zz'"):
        recall(ctx, tool_call_id="call_zz")


def parts_of(ctx: ToolContext, offset: int | None = None, **arguments) -> list[tuple[str, str]]:
    """Every part of one recall from ``offset``, following each part's next offset: (header, text) pairs."""
    found = []
    while True:
        extra = {} if offset is None else {"offset": offset}
        out = recall(ctx, **arguments, **extra)
        assert len(out.encode("utf-8")) <= min(ctx.output_bytes or ctx.max_output_chars, ctx.max_output_chars)
        header, separator, text = out.partition(f"\n{PART_TEXT}\n")
        assert separator, out[:300]
        found.append((header, text))
        match = re.search(r"next offset: (\d+) ", header)
        if match is None:
            assert "this is the last part" in header.splitlines()[0]
            return found
        offset = int(match.group(1))
        assert len(found) < 1000


def whole_text(messages: list[dict], first: int = 1) -> str:
    """The recalled text of ``messages`` (no secrets in them): one ``[span N] {JSON}`` line each."""
    return "\n".join(f"[span {n}] {orjson.dumps(m).decode()}" for n, m in enumerate(messages, start=first))


def ranges_of(parts: list[tuple[str, str]]) -> list[tuple[int, int, int]]:
    found = []
    for header, _text in parts:
        match = re.search(r"a part: characters \[(\d+), (\d+)\) of (\d+);", header)
        assert match, header
        found.append((int(match.group(1)), int(match.group(2)), int(match.group(3))))
    return found


JSON_ORIGINAL = orjson.dumps(
    {"rows": [{"n": n, "name": "caf\u00e9 \u2615 \u65e5\u672c \U0001d11e", "quote": '"x"\n'} for n in range(700)]}
).decode()
CALL = {"id": "call_big", "type": "function", "function": {"name": "dump", "arguments": "{}"}}
BIG = [
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "call_big", "content": JSON_ORIGINAL},
]


def test_recalled_text_that_fits_comes_whole(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 1, MESSAGES)], output_bytes=5000)
    out = recall(ctx, span="1-2")
    assert PART_TEXT not in out and out == "archived messages 1-2:\n" + whole_text(MESSAGES[:2])


def test_a_json_original_over_the_budget_comes_in_parts_that_join_to_it_exactly(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 3, BIG)], output_bytes=6000)
    parts = parts_of(ctx, tool_call_id="call_big")
    text = "".join(part for _header, part in parts)
    assert text == whole_text(BIG, first=3)
    assert len(parts) >= 10  # about 56 KB of UTF-8 in 6000-byte parts
    assert lines_of("\n" + text)[4]["content"] == JSON_ORIGINAL
    # The ranges are characters, contiguous from 0 to the total; each part's next offset is its end.
    ranges = ranges_of(parts)
    assert ranges[0][0] == 0 and ranges[-1][1] == ranges[-1][2] == len(text)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
    for (header, part), (start, end, _total) in zip(parts, ranges, strict=True):
        assert len(part) == end - start
        if end < len(text):
            assert (
                f'next offset: {end} (recall again with tool_call_id "call_big" and offset {end} for the rest)'
                in header
            )


def test_a_message_split_across_parts_is_marked_on_both_sides(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 3, BIG)], output_bytes=6000)
    parts = parts_of(ctx, tool_call_id="call_big")
    first, middle, last = parts[0][0], parts[1][0], parts[-1][0]
    assert "This part ends inside the message of span 4; the next part continues it." in first
    assert "begins inside" not in first  # it starts with span 3, whole
    assert "This part begins inside the message of span 4; its start is in the part before." in middle
    assert "ends inside the message of span 4" in middle
    assert "begins inside the message of span 4" in last and "ends inside" not in last


def test_parts_end_at_a_message_boundary_when_one_is_near(tmp_path: Path) -> None:
    small = [{"role": "user", "content": f"message {n} " + "z" * 300} for n in range(40)]
    ctx = context(tmp_path, [Generation(1, 1, small)], output_bytes=2000)
    parts = parts_of(ctx, span="1-40")
    assert len(parts) > 5
    assert all(text.endswith("\n") for _header, text in parts[:-1])
    assert not any("inside the message" in header for header, _text in parts)
    assert "".join(text for _header, text in parts) == whole_text(small)
    assert 'recall again with span "1-40" and offset' in parts[0][0]


def test_without_a_budget_the_output_cap_bounds_the_parts(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 3, BIG)], max_output_chars=20_000)
    parts = parts_of(ctx, tool_call_id="call_big")
    assert "".join(text for _header, text in parts) == whole_text(BIG, first=3)


def test_an_offset_starts_a_part_there_and_counts_characters_not_bytes(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 3, BIG)], output_bytes=6000)
    text = whole_text(BIG, first=3)
    at = text.index("\U0001d11e")  # an astral character: one character, four bytes
    out = recall(ctx, tool_call_id="call_big", offset=at)
    header, _sep, part = out.partition(f"\n{PART_TEXT}\n")
    assert part.startswith("\U0001d11e") and text[at:].startswith(part)
    assert f"a part: characters [{at}, {at + len(part)}) of {len(text)};" in header
    assert recall(ctx, tool_call_id="call_big", offset=float(at)) == out  # 12.0 is a whole number
    # Asked with an offset, even text that fits comes as a part (the last).
    small = context(tmp_path, [Generation(1, 1, MESSAGES)])
    out = recall(small, span="1", offset=0)
    total = len(whole_text(MESSAGES[:1]))
    assert (
        out.splitlines()[0]
        == f"archived messages 1-1, a part: characters [0, {total}) of {total}; this is the last part"
    )
    assert out.endswith(f"{PART_TEXT}\n" + whole_text(MESSAGES[:1]))


def test_masking_is_noted_in_every_part(tmp_path: Path) -> None:
    secret = [{"role": "tool", "tool_call_id": "c", "content": "DB_PASS=S3cret_99\n" + "y" * 5000}]
    parts = parts_of(context(tmp_path, [Generation(1, 1, secret)], output_bytes=1500), tool_call_id="c")
    assert len(parts) > 2
    assert all("[1 value(s) that look like secrets are masked]" in header for header, _text in parts)
    assert "S3cret_99" not in "".join(text for _header, text in parts)


@pytest.mark.parametrize(
    ("offset", "message"),
    [
        (-1, r"offset must be 0 or more \(characters from the start\), got -1"),
        (2.5, r"offset must be a whole number of characters .*got 2\.5"),
        ("10", r"offset must be a whole number of characters .*got '10'"),
        (True, r"offset must be a whole number of characters .*got True"),
    ],
)
def test_a_bad_offset_is_refused_naming_the_problem(tmp_path: Path, offset: object, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        recall(context(tmp_path, [Generation(1, 1, MESSAGES)]), span="1", offset=offset)


def test_an_offset_beyond_the_end_is_refused_with_the_length(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 1, MESSAGES)])
    total = len(whole_text(MESSAGES[:1]))
    for offset in (total, total + 5000):
        with pytest.raises(ToolError, match=rf"offset {offset} is beyond the end: the recalled text is {total} "):
            recall(ctx, span="1", offset=offset)


def test_a_budget_too_small_for_any_part_is_a_clear_error(tmp_path: Path) -> None:
    ctx = context(tmp_path, [Generation(1, 3, BIG)], output_bytes=100)
    with pytest.raises(ToolError, match=r"tool-output budget \(100 bytes\) leaves no room for a part"):
        recall(ctx, tool_call_id="call_big")


def test_the_pipeline_gives_recall_the_calls_budget_and_never_cuts_a_part(tmp_path: Path) -> None:
    from types import SimpleNamespace

    from i_core.approval import ApprovalGate
    from i_core.tool_calls import ToolPipeline

    class Hooks:
        def checked(self, event: str, data: dict[str, object]) -> object:
            if event == "before_tool":
                return data["name"], data["arguments"]
            if event == "tool_approval":
                return data["decision"]
            return SimpleNamespace(output=data["output"], images=data["images"])

    budget = SimpleNamespace(check=lambda *_a, **_k: SimpleNamespace(verdict=SimpleNamespace(per_call_bytes=4000)))
    hooks = Hooks()
    pipeline = ToolPipeline(
        hooks,  # type: ignore[arg-type]
        SimpleNamespace(tool=lambda name: None),  # type: ignore[arg-type]
        context(tmp_path, [Generation(1, 3, BIG)]),
        [],
        ApprovalGate(hooks, lambda *_a: "n", None),  # type: ignore[arg-type]
        budget,  # type: ignore[arg-type]
    )
    call = {"id": "c9", "type": "function", "function": {"name": "recall", "arguments": '{"tool_call_id": "call_big"}'}}
    [result] = pipeline.run_batch([], [call])
    assert "cut by the tool-output budget" not in result["content"]
    assert len(result["content"].encode("utf-8")) <= 4000
    assert "a part: characters [0, " in result["content"] and PART_TEXT in result["content"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "give exactly one of span"),
        ({"span": "1", "tool_call_id": "x"}, "give exactly one of span"),
        ({"span": "abc"}, "span must be a message number or a range"),
        ({"span": "9-3"}, "is empty"),
        ({"span": "0"}, "is empty"),
        ({"span": "1-20000"}, "longer than 10000 messages"),
        ({"span": 5}, "argument 'span' must be a string"),
        ({"line": "1"}, "unknown argument"),
        ({"span": "1", "offset": -3}, "offset must be 0 or more"),
    ],
)
def test_bad_arguments_are_refused_clearly(tmp_path: Path, arguments: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        recall(context(tmp_path, [Generation(1, 1, MESSAGES)]), **arguments)


def test_without_an_archive_recall_says_nothing_is_archived(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="no archive"):
        recall(context(tmp_path, None), span="1")
    with pytest.raises(ToolError, match="nothing is archived in this session yet"):
        recall(context(tmp_path, []), span="1")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(st.text(min_size=0, max_size=1500), min_size=1, max_size=6),
    budget=st.integers(min_value=600, max_value=4000),
)
def test_any_text_in_parts_joins_exactly_and_each_part_fits(tmp_path: Path, contents: list[str], budget: int) -> None:
    messages = [{"role": "user", "content": text} for text in contents]
    ctx = context(tmp_path, [Generation(1, 1, messages)], output_bytes=budget)
    from i_core.tools.recall import _masked  # the expected text masks what recall masks

    expected = "\n".join(f"[span {n}] {orjson.dumps(_masked(m)[0]).decode()}" for n, m in enumerate(messages, start=1))
    parts = parts_of(ctx, span=f"1-{len(messages)}", offset=0)
    assert "".join(text for _header, text in parts) == expected
