from __future__ import annotations

import io

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_protocol import MAX_FRAME_BYTES, FrameError, decode_frame, encode_frame
from i_protocol.framing import is_unsigned_id, peek_id, read_line


def test_encode_adds_one_newline_and_round_trips():
    frame = encode_frame({"id": 1, "data": {"text": "héllo\nworld"}})
    assert frame.endswith(b"\n") and frame.count(b"\n") == 1
    assert decode_frame(frame) == {"id": 1, "data": {"text": "héllo\nworld"}}


def test_encode_refuses_frames_over_the_limit():
    # The limit includes the newline: a body of exactly MAX bytes plus newline is one too many.
    overhead = len(orjson.dumps({"x": ""}))
    fits = encode_frame({"x": "a" * (MAX_FRAME_BYTES - 1 - overhead)})
    assert len(fits) == MAX_FRAME_BYTES
    with pytest.raises(FrameError, match="exceeds"):
        encode_frame({"x": "a" * (MAX_FRAME_BYTES - overhead)})


def test_encode_refuses_unserialisable_and_escapes_lone_surrogates():
    with pytest.raises(FrameError, match="not JSON-serialisable"):
        encode_frame({"x": object()})
    # Undecodable text travels losslessly as a JSON escape (see test_hard_cases.py).
    assert encode_frame({"x": "\udcff"}) == b'{"x":"\\udcff"}\n'


@pytest.mark.parametrize(
    "line, message",
    [
        (b"not json\n", "not a JSON frame: 'not json' .*logs belong on stderr"),
        (b'{"id": 1, broken\n', r"not valid JSON \(.+\): '\{\"id\": 1, broken'"),
        (b'{"id": 1, "x": "caf\xe9"}\n', "not valid UTF-8 \\(byte 0xe9 at offset 19\\)"),
        (b"[1,2]\n", "must be a JSON object"),
        (b'"text"\n', "must be a JSON object"),
    ],
)
def test_decode_rejects_bad_frames(line, message):
    with pytest.raises(FrameError, match=message):
        decode_frame(line)


def test_peek_id_reads_only_a_leading_id():
    assert peek_id(b'{"id": 42, "event": broken') == 42
    assert peek_id(b'  {"id":7}') == 7
    assert peek_id(b'{"event":"x","id":3}') is None
    assert peek_id(b'{"id":-1}') is None
    assert peek_id(b"garbage") is None
    assert peek_id(b'{"id":99999999999999999999}') is None  # over 2**64


def test_read_line_consumes_an_oversized_line_and_stays_in_step():
    big = b'{"id":5,"data":"' + b"z" * MAX_FRAME_BYTES + b'"}\n'
    stream = io.BytesIO(big + b'{"id":6}\n')
    head, oversized = read_line(stream)
    assert oversized and peek_id(head) == 5
    assert read_line(stream) == (b'{"id":6}\n', False)
    assert read_line(stream) == (b"", False)


@given(st.integers())
def test_is_unsigned_id(value):
    assert is_unsigned_id(value) == (0 <= value < 2**64)


def test_bool_is_not_an_id():
    assert not is_unsigned_id(True)
    assert not is_unsigned_id(1.0)


@given(
    st.dictionaries(
        st.text(),
        st.recursive(
            st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
            lambda c: st.lists(c) | st.dictionaries(st.text(), c),
            max_leaves=20,
        ),
    )
)
def test_any_json_object_round_trips(value):
    try:
        frame = encode_frame(value)
    except FrameError:
        # Only lone surrogates may be refused: orjson insists on valid UTF-8.
        assert "\\ud" in repr(value)
        return
    assert decode_frame(frame) == value
