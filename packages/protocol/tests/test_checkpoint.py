"""The checkpoint contract's types: turn context on tool events, the undo request and answer."""

from __future__ import annotations

import pytest

from i_protocol import ProtocolError
from i_protocol.checkpoint import TurnContext, UndoRequest, turn_context, undo_answer, undo_request
from i_protocol.handshake import EXTENSIONS

FILE = {"kind": "file", "sha256": "ab" * 32, "mode": 0o644}


def test_the_extension_names_are_registered():
    assert {"turn_context", "undo"} <= set(EXTENSIONS)


def test_turn_context_is_read_only_when_both_fields_are_valid():
    assert turn_context({"session": "s-1", "turn": 3}) == TurnContext("s-1", 3)
    assert TurnContext("s-1", 3).as_json() == {"session": "s-1", "turn": 3}
    for bad in (
        {"turn": 3},
        {"session": "s", "turn": 0},
        {"session": "../x", "turn": 1},
        {"session": "s", "turn": True},
    ):
        assert turn_context(bad) is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        ({"session": "", "turn": 1}, "data.session"),
        ({"session": "a/b", "turn": 1}, "data.session"),
        ({"session": "s", "turn": "1"}, "data.turn"),
        ({"session": "s", "turn": 1, "dry_run": "yes"}, "data.dry_run"),
    ],
)
def test_undo_request_names_the_bad_field(data, problem):
    with pytest.raises(ProtocolError, match=problem.replace(".", r"\.")):
        undo_request(data)


def test_undo_request_defaults_to_a_dry_run():
    assert undo_request({"session": "s", "turn": 2}) == UndoRequest("s", 2, True)


def test_undo_answer_round_trips_and_is_checked():
    sent = UndoRequest("s", 2, True)
    item = {"path": "a.py", "status": "restore", "before": FILE, "after": {"kind": "absent"}, "current": FILE}
    answer = undo_answer({**sent.as_json(), "turns": [2, 3], "files": [item], "not_undoable": ["x"]}, sent)
    assert answer.turns == (2, 3) and answer.with_status("restore")[0].path == "a.py"
    assert answer.as_json()["files"] == [item] and answer.as_json()["not_undoable"] == ["x"]
    with pytest.raises(ProtocolError, match="does not implement the undo event"):
        undo_answer(sent.as_json(), sent)  # returned unchanged
    with pytest.raises(ProtocolError, match="another session or turn"):
        undo_answer({**sent.as_json(), "turn": 3, "files": []}, sent)
    with pytest.raises(ProtocolError, match=r"files\[0\]\.status"):
        undo_answer({**sent.as_json(), "files": [{**item, "status": "maybe"}]}, sent)
    with pytest.raises(ProtocolError, match=r"files\[0\]\.before"):
        undo_answer({**sent.as_json(), "files": [{**item, "before": {"kind": "pipe"}}]}, sent)
