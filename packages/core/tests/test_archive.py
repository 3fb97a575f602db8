"""The archive of compacted generations: numbering, appends, the size bound, debris, citations."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from i_core.archive import Archive, Index, citation
from i_core.call_ids import parse_cited_ids
from i_core.compaction import summary_message, without_citation
from i_core.errors import SessionError


def turn(n: int, size: int = 100) -> list[dict]:
    call = {"id": f"call_{n}", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    return [
        {"role": "user", "content": f"turn {n} " + "x" * size},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"call_{n}", "content": f"result {n}"},
    ]


def commit(archive: Archive, index: Index, replaced: list[dict]) -> Index:
    generation, after = archive.plan(index, replaced)
    assert generation is not None
    after = archive.write(index, generation, after)
    return Index.from_meta({"archive": after.to_meta()})  # as a checkpoint's meta round trip gives it


def test_generations_are_numbered_across_compactions_and_summaries_are_not_archived(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    index = commit(archive, Index(), turn(1) + turn(2))
    summary = summary_message("what happened", citation=citation(index))
    index = commit(archive, index, [summary, *turn(3)])
    generations = archive.generations(index)
    assert [(g.number, g.first, g.last) for g in generations] == [(1, 1, 6), (2, 7, 9)]
    assert generations[0].messages == turn(1) + turn(2)  # exactly, summary left out of the second
    assert generations[1].tool_call_ids() == ["call_3"]
    assert index.next_span == 10 and index.next_generation == 3
    assert archive.path.name == "s.archive.jsonl"
    assert archive.path.stat().st_size == index.size


def test_the_index_knows_every_archived_call_id_without_reading_the_archive(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json", max_bytes=2500)
    index = commit(archive, Index(), turn(1) + turn(2))
    index = commit(archive, index, turn(3))
    assert index.call_ids() == {"call_1", "call_2", "call_3"}
    index = commit(archive, index, turn(4, size=2000))  # the bound drops the older generations
    assert index.dropped == [[1, 9]]
    archive.path.unlink()  # the ids come from the session's index alone
    assert index.call_ids() == {"call_4"}  # a dropped call is not recallable: its id is free again
    assert Index().call_ids() == frozenset()


def test_a_replaced_range_with_only_a_summary_archives_nothing(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    generation, after = archive.plan(Index(), [summary_message("only a summary")])
    assert generation is None and after == Index()


def test_the_bound_drops_the_oldest_generations_and_the_citation_says_so(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json", max_bytes=2500)
    index = Index()
    for n in range(1, 5):
        index = commit(archive, index, turn(n, size=600))
    numbers = [g.number for g in archive.generations(index)]
    assert numbers[-1] == 4 and numbers[0] > 1, numbers
    assert archive.path.stat().st_size == index.size <= 2500
    gone = index.dropped
    assert gone[0][0] == 1 and gone[-1][1] == 3 * (numbers[0] - 1)  # merged into one range
    text = citation(index)
    assert f"No longer archived (removed by the archive's size bound, or damaged): spans 1-{gone[-1][1]}." in text
    assert "[span 10-12] tool calls: call_4" in text


def test_the_newest_generation_is_kept_even_over_the_bound(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json", max_bytes=1024)
    index = commit(archive, Index(), turn(1, size=5000))
    index = commit(archive, index, turn(2, size=5000))
    assert [g.number for g in archive.generations(index)] == [2]
    assert index.dropped == [[1, 3]]


def test_a_generation_whose_checkpoint_failed_is_debris_and_the_next_write_removes_it(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    index = commit(archive, Index(), turn(1))
    orphan, _after = archive.plan(index, turn(2))
    assert orphan is not None
    archive.write(index, orphan, _after)  # ... and then the session's save failed: index unchanged
    with open(archive.path, "ab") as handle:
        handle.write(b'{"generation":9,"first":')  # and a torn line from a crash on top
    assert [g.number for g in archive.generations(index)] == [1]  # readers skip both
    index = commit(archive, index, turn(3))
    lines = archive.path.read_bytes().splitlines()
    assert [orjson.loads(line)["generation"] for line in lines] == [1, 2]
    assert archive.generations(index)[1].messages == turn(3)


def test_lone_surrogates_are_archived_exactly(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    messages = [{"role": "tool", "tool_call_id": "c", "content": "caf\udce9.txt"}]
    index = commit(archive, Index(), messages)
    assert archive.generations(index)[0].messages == messages
    assert b"\\udce9" in archive.path.read_bytes()


def test_an_unwritable_archive_is_a_session_error_naming_it(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    archive.path.mkdir()  # something that is not a file sits where the archive goes
    generation, after = archive.plan(Index(), turn(1))
    assert generation is not None
    with pytest.raises(SessionError, match=r"cannot archive the compacted messages: .*s\.archive\.jsonl"):
        archive.write(Index(), generation, after)


def test_the_citation_is_taken_off_before_the_next_compaction_reads_the_summary() -> None:
    index = Index(next_span=7, next_generation=2, size=1, spans=[[1, 1, 6, ["call_1", "call_2"]]])
    text = citation(index)
    assert text.splitlines()[1] == "[span 1-6] tool calls: call_1, call_2"
    plain = summary_message("the summary")
    cited = summary_message("the summary", citation=text)
    assert cited["content"].endswith(text)
    assert without_citation(cited) == plain
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    assert without_citation(summary_message("s", [image], text)) == summary_message("s", [image])
    assert without_citation({"role": "user", "content": f"not a summary\n\n{text}"})["content"].endswith(text)
    assert citation(Index()) == ""


def test_a_damaged_meta_index_reads_as_empty_rather_than_failing() -> None:
    assert Index.from_meta({"archive": "nonsense"}) == Index()
    damaged = Index.from_meta({"archive": {"next_span": -3, "spans": [[1, "x"], [1, 1, 2, []]], "dropped": [[1]]}})
    assert damaged.next_span == 1 and damaged.spans == [[1, 1, 2, []]] and damaged.dropped == []


def test_the_citation_stays_bounded_however_long_the_session() -> None:
    spans = [[n, 10 * n + 1, 10 * n + 10, [f"call_{n}_{k}" for k in range(30)]] for n in range(1, 201)]
    text = citation(Index(next_span=2011, next_generation=201, size=1, spans=spans, dropped=[[1, 10]]))
    assert len(text) < 2000
    lines = text.splitlines()
    assert lines[1].startswith("[span 11-") and "earlier messages (tool call ids not listed)" in lines[1]
    assert lines[-2] == "[span 2001-2010] tool calls: call_200_{0..29}"  # all 30, as one run
    assert lines[-1] == "No longer archived (removed by the archive's size bound, or damaged): spans 1-10."


def test_a_cited_span_names_every_tool_call_id_in_it() -> None:
    # Provider ids are random: no run to compress, yet every one is cited (no "and N more"), even
    # past the citation's bound for the newest span; an older span is cited whole or without ids.
    ids = [f"call_{n:03d}x{'abcdefghij' * 2}" for n in range(55)]
    spans = [[1, 1, 9, ["toolu_010", "toolu_011"]], [2, 10, 200, ids]]
    lines = citation(Index(next_span=201, next_generation=3, size=1, spans=spans)).splitlines()
    assert lines[1] == "[span 1-9] earlier messages (tool call ids not listed)"
    head, _, listed = lines[2].partition(" tool calls: ")
    assert head == "[span 10-200]" and parse_cited_ids(listed) == ids and len(lines) == 3
    small = citation(Index(next_span=201, next_generation=3, size=1, spans=[spans[0], [2, 10, 200, ids[:20]]]))
    assert small.splitlines()[1] == "[span 1-9] tool calls: toolu_010, toolu_011"


def test_adjacent_generations_without_tool_calls_are_cited_as_one_span() -> None:
    spans = [[1, 1, 4, []], [2, 5, 6, []], [3, 7, 9, ["call_x"]], [4, 10, 11, []], [5, 12, 13, []]]
    lines = citation(Index(next_span=14, next_generation=6, size=1, spans=spans)).splitlines()[1:]
    assert lines == ["[span 1-6]", "[span 7-9] tool calls: call_x", "[span 10-13]"]


def test_a_damaged_archive_is_set_aside_and_what_can_be_read_is_kept(tmp_path: Path) -> None:
    archive = Archive(tmp_path / "s.json")
    index = Index()
    for n in range(1, 4):
        index = commit(archive, index, turn(n))
    data = archive.path.read_bytes()
    second = data.index(b'{"generation":2')
    archive.path.write_bytes(data[: second + 30] + b"GARBAGE" + data[second + 30 :])  # generation 2 broken
    found, missing = archive.read(index)
    assert [g.number for g in found] == [1] and missing == [2, 3]  # 3 now lies past the committed size
    index = commit(archive, index, turn(4))
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and b"GARBAGE" in aside[0].read_bytes()  # the damaged copy is kept
    assert [g.number for g in archive.generations(index)] == [1, 4]
    assert index.dropped == [[4, 9]] and [entry[0] for entry in index.spans] == [1, 4]
    assert "No longer archived (removed by the archive's size bound, or damaged): spans 4-9." in citation(index)


def test_the_citation_is_data_and_names_no_tool() -> None:
    # A core without recall (after a rollback) must not read an instruction to call it.
    spans = [[1, 1, 6, ["call_1_0"]], [2, 7, 12, []]]
    text = citation(Index(next_span=13, next_generation=3, size=1, spans=spans, dropped=[[1, 2]]))
    assert "recall" not in text.lower()
    assert "[span 1-6] tool calls: call_1_0" in text and "[span 7-12]" in text
    runs = citation(Index(next_span=13, next_generation=2, size=1, spans=[[1, 1, 12, [f"c_{n}" for n in range(9)]]]))
    assert "recall" not in runs.lower() and "[span 1-12] tool calls: c_{0..8}" in runs


def test_a_citation_of_an_earlier_core_is_taken_off_before_a_compaction() -> None:
    from i_core.compaction import summary_message, without_citation

    legacy = (
        "Recall: the original messages this summary replaced are archived. The recall tool returns them.\n[span 1-4]"
    )
    message = summary_message("the summary", citation=legacy)
    assert without_citation(message) == summary_message("the summary")
