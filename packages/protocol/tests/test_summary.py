"""The summary request's wrapper, its tags and its size (i_protocol.summary): one definition for
the core, which builds the request, and every compactor, which packs chunks for it."""

from __future__ import annotations

import orjson
import pytest

from i_protocol.handshake import EXTENSIONS
from i_protocol.summary import (
    EXTENSION,
    OLDER_CORE_MARGIN,
    SUMMARY_SO_FAR_OPEN,
    TRANSCRIPT_CLOSE,
    TRANSCRIPT_INTRO,
    TRANSCRIPT_OPEN,
    Overhead,
    read_overhead,
    render_transcript,
    request_overhead,
    summary_request,
)

MESSAGES = [
    {"role": "user", "content": "fix the bug"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"path":"a"}'}}],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "print(1)"},
]


def test_the_transcript_is_wrapped_as_untrusted_data():
    text = render_transcript(MESSAGES)
    assert text == (
        f"{TRANSCRIPT_INTRO}\n<untrusted_transcript>\n[user]\nfix the bug\n\n"
        '[assistant]\n\n[tool call c1: read {"path":"a"}]\n\n[tool result c1]\nprint(1)\n</untrusted_transcript>'
    )


def test_a_request_carries_the_summary_so_far_before_the_transcript_and_the_images_last():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA=="}}
    system, user = summary_request("PROMPT", MESSAGES, "so far", [image])
    assert system == {"role": "system", "content": "PROMPT"}
    text = user["content"][0]["text"]
    assert text.index("<summary_so_far>\nso far\n</summary_so_far>") < text.index(TRANSCRIPT_OPEN)
    assert user["content"][1:] == [image]
    assert SUMMARY_SO_FAR_OPEN not in summary_request("PROMPT", MESSAGES)[1]["content"]


@pytest.mark.parametrize("summary", ["s", 'a longer summary so far\nwith lines and "quotes"'])
def test_the_overhead_is_what_the_wrapper_adds_on_the_wire(summary):
    """Request bytes = the overhead + the prompt, the summary so far and the transcript body as JSON text."""
    prompt, body = "PROMPT", "[user]\nfix the bug"
    request = summary_request(prompt, [{"role": "user", "content": "fix the bug"}], summary)
    own = sum(len(orjson.dumps(text)) - 2 for text in (prompt, summary, body))
    assert len(orjson.dumps(request)) == request_overhead().bytes + own


def test_the_overhead_in_tokens_is_at_the_given_rate():
    size = request_overhead().bytes
    assert request_overhead().tokens == size  # 1 token per byte: the rate of text never observed
    assert request_overhead(0.25) == Overhead(size, -(-size // 4))
    assert request_overhead(float("nan")).tokens == size
    assert TRANSCRIPT_CLOSE in summary_request("", [], "x")[1]["content"]


def test_the_field_is_a_registered_extension_and_reads_back():
    assert EXTENSION in EXTENSIONS
    sent = request_overhead(0.3).as_json()
    assert read_overhead({EXTENSION: sent}) == request_overhead(0.3)


@pytest.mark.parametrize(
    "data",
    [
        {},
        {EXTENSION: None},
        {EXTENSION: {"bytes": 400}},
        {EXTENSION: {"bytes": -1, "tokens": 3}},
        {EXTENSION: {"bytes": True, "tokens": 3}},
        {EXTENSION: {"bytes": 4.5, "tokens": 3}},
    ],
)
def test_without_a_usable_field_a_worker_keeps_the_margin_of_older_cores(data):
    assert read_overhead(data) == OLDER_CORE_MARGIN == Overhead(512, 192)
