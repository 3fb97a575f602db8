"""The reference token counter: the documented rule, linear time, and chat-template framing."""

from __future__ import annotations

import time

import pytest

from i_protocol.testing import scaled
from i_scripted import prompt_tokens, reference_tokens


def test_reference_tokens_follows_the_documented_rule() -> None:
    assert reference_tokens("Hello world.") == 3  # "Hello", " world", "."
    assert reference_tokens("internationalization") == 3  # 20 letters: one token per started 7
    assert reference_tokens("12345") == 2  # "123", "45"
    assert reference_tokens("中文!") == 3  # each non-ASCII character is a token
    assert reference_tokens('{"id": 7}') == 7  # { " id " : " 7" }
    assert reference_tokens("a  \n\tb") == 3  # "a", a whitespace run, "b"
    assert reference_tokens("") == 0


def test_the_reference_split_is_linear_time() -> None:
    for hostile in ("a" * 200_000, " " * 200_000, "1" * 200_000, "!" * 200_000, "é" * 200_000, " a" * 100_000):
        started = time.perf_counter()
        reference_tokens(hostile)
        assert time.perf_counter() - started < scaled(2.0)  # a guard against quadratic time, not a timing


def test_prompt_tokens_frames_an_openai_request_like_a_chat_template() -> None:
    tool = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {}}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p":1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "tools": [tool],
    }
    expected = (
        3
        + (4 + reference_tokens("Be brief."))
        + (4 + reference_tokens("Look:") + 85)
        + (4 + 3 + reference_tokens("read") + reference_tokens('{"p":1}'))
        + (4 + reference_tokens("done"))
        + (8 + reference_tokens('{"name":"read","parameters":{"type":"object"}}'))
    )
    assert prompt_tokens("openai", body) == expected == 3 + 7 + 91 + 15 + 5 + 32 == 153


def test_prompt_tokens_counts_every_anthropic_block() -> None:
    body = {
        "model": "m",
        "max_tokens": 5,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image", "source": {}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
        ],
        "tools": [{"name": "read", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    }
    expected = (
        3
        + (4 + reference_tokens("Be brief."))
        + (4 + reference_tokens("Look:") + 85)
        + (4 + 3 + reference_tokens("read") + reference_tokens('{"p":1}'))
        + (4 + reference_tokens("done"))
        + (8 + reference_tokens('{"name":"read","input_schema":{"type":"object"}}'))
    )
    assert prompt_tokens("anthropic", body) == expected
    with pytest.raises(ValueError, match="kind must be openai, anthropic or responses"):
        prompt_tokens("gemini", body)
