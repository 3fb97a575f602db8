"""The ``recall`` built-in tool: spans, tool call ids, masking, the output cap, clear refusals."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from i_core.archive import Generation
from i_core.tools import BUILTIN_NAMES, FREE_TOOLS, ToolContext, ToolError, execute, prepare


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


def test_the_output_cap_cuts_at_a_message_and_says_how_to_get_the_rest(tmp_path: Path) -> None:
    big = [{"role": "user", "content": f"message {n} " + "z" * 400} for n in range(10)]
    ctx = context(tmp_path, [Generation(1, 1, big)], max_output_chars=2000)
    out = recall(ctx, span="1-10")
    assert len(out) <= 2000 + 200
    shown = lines_of(out)
    assert shown == {n + 1: big[n] for n in range(len(shown))} and 0 < len(shown) < 10
    assert out.splitlines()[-1] == (
        f'[output cap of 2000 characters reached; the rest: recall with span "{len(shown) + 1}-10"]'
    )
    huge = context(tmp_path, [Generation(1, 1, [{"role": "user", "content": "w" * 5000}])], max_output_chars=1000)
    assert "[... message cut at" in recall(huge, span="1")


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
