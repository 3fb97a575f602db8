"""One way to measure for every package: image parts, UTF-8 length, wire bytes (i_protocol.history)."""

from __future__ import annotations

import orjson
import pytest

from i_protocol.history import IMAGE_PART_TYPES, has_images, is_image_part, utf8_len, wire_bytes


@pytest.mark.parametrize("kind", ["image_url", "image", "input_image"])
def test_every_provider_format_of_an_image_part_is_one(kind):
    assert kind in IMAGE_PART_TYPES
    assert is_image_part({"type": kind})
    assert has_images({"role": "user", "content": [{"type": "text", "text": "see"}, {"type": kind}]})


@pytest.mark.parametrize("part", [{"type": "text", "text": "image_url"}, "image_url", None, {"image_url": {}}])
def test_anything_else_is_no_image_part(part):
    assert not is_image_part(part)


@pytest.mark.parametrize(
    ("text", "size"),
    [("", 0), ("plain ascii", 11), ("é", 2), ("€", 3), ("🙂", 4), ("a\ud800b", 5), ("\udfff", 3)],
)
def test_utf8_len_counts_bytes_and_a_lone_surrogate_as_three(text, size):
    assert utf8_len(text) == size


def test_wire_bytes_is_the_compact_json_size():
    message = {"role": "tool", "tool_call_id": "c1", "content": 'résumé "quoted"\n'}
    assert wire_bytes(message) == len(orjson.dumps(message))
    assert wire_bytes([message, message]) == len(orjson.dumps([message, message]))


def test_wire_bytes_measures_a_lone_surrogate_that_json_cannot_encode():
    message = {"role": "user", "content": "half \ud800 of a pair"}
    with pytest.raises(TypeError):
        orjson.dumps(message)
    assert wire_bytes(message) == len(repr(message).encode("utf-8", "surrogatepass"))
