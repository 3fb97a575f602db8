"""``docs/events.md`` against ``i_protocol.events``: every event documented, every field of each
event's request type in its row and every field the row names in the type, every field the core
reads back in the answer column, and the example frames parse as their event's types."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from i_protocol import events
from i_protocol.events import parse_answer, parse_request

DOC = Path(__file__).parent.parent / "docs" / "events.md"

VALUES = {"allow", "ask", "deny", "declined"}
"""Words the table writes in backticks that are values, not fields."""


def _rows() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("| `"):
            name, sent, answer = (cell.strip() for cell in line.strip().strip("|").split(" | "))
            rows[name.strip("`")] = (sent, answer)
    return rows


def _fields(cell: str) -> set[str]:
    """The field names a cell writes: a backticked ``name``, ``name?``, ``name.part`` or ``name: ...``."""
    found = set()
    for span in re.findall(r"`([^`]+)`", cell):
        match = re.fullmatch(r"([a-z_]+)(?:\?|\.\S+)?(?:: .*)?", span)
        if match and match[1] not in VALUES and match[1] not in events.EVENTS:
            found.add(match[1])
    return found


ROWS = _rows()


def test_the_table_documents_every_lifecycle_event_and_the_provider_request():
    assert set(ROWS) == {*events.LIFECYCLE_EVENTS, "provider_request"}
    assert set(ROWS) <= set(events.EVENTS)


@pytest.mark.parametrize("event", sorted(ROWS))
def test_each_rows_data_column_names_exactly_the_fields_of_the_request_type(event):
    sent, _ = ROWS[event]
    assert _fields(sent) == set(events.REQUESTS[event].__annotations__)


@pytest.mark.parametrize("event", sorted(ROWS))
def test_each_rows_answer_column_names_every_field_the_core_reads(event):
    _, answer = ROWS[event]
    assert set(events.ANSWERS[event].__annotations__) <= _fields(answer)


def test_the_tool_event_paragraph_matches_its_types():
    text = DOC.read_text(encoding="utf-8")
    paragraph = text[text.index("External tools receive the `tool` event") :]
    found = re.search(r"`(\{\"name\".*?\})` \(arguments parsed\)", paragraph)
    assert found is not None
    sent = orjson.loads(found[1].replace("{...}", "{}").replace("...", "null"))
    assert set(sent) == set(events.REQUESTS["tool"].__annotations__)
    assert set(events.ANSWERS["tool"].__annotations__) == {"output", "images", "is_error"}
    for field in ("output", "images", "is_error"):
        assert f'"{field}"' in paragraph


def test_the_protocol_readme_example_frames_parse_as_their_events():
    readme = Path(__file__).parents[2] / "protocol" / "README.md"
    lines = re.findall(r'^(?:→ )?(\{"id":\d+,"event":.*\})$', readme.read_text(encoding="utf-8"), re.M)
    frames = [orjson.loads(line) for line in lines if "…" not in line]
    assert frames, "no example request frame found in the protocol README"
    for frame in frames:
        if frame["event"] in events.EVENTS:
            parse_request(frame["event"], frame["data"])


def test_an_answer_the_table_describes_parses():
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
    plan = parse_answer("compact_plan", {"cut": None, "reason": "not_needed", "detail": "fits"}, {"history": history})
    assert plan.cut is None and plan.reason == "not_needed: fits"
    revision = parse_answer("after_compact", {"request": {"prompt": "p", "messages": []}, "state": {"n": 1}})
    assert revision.request == events.SummaryRequest("p", []) and revision.state == {"n": 1}
