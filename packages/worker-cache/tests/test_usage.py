"""Provider usage rules; unknown usage is never 0."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_cache.usage import UnknownUsage, Usage, read_usage


def test_openai_cached_tokens_are_inside_prompt_tokens() -> None:
    response = {
        "usage": {"prompt_tokens": 1000, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 900}}
    }
    assert read_usage("openai", response) == Usage(1000, 900, 0)


def test_responses_cached_tokens_are_inside_input_tokens() -> None:
    response = {"usage": {"input_tokens": 400, "input_tokens_details": {"cached_tokens": 256}, "output_tokens": 3}}
    assert read_usage("responses", response) == Usage(400, 256, 0)


def test_anthropic_total_is_the_sum_and_creation_is_not_a_hit() -> None:
    usage = {"input_tokens": 10, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 190}
    assert read_usage("anthropic", {"usage": usage}) == Usage(1000, 800, 190)


def test_deepseek_hit_and_miss_partition_the_input() -> None:
    usage = {"prompt_tokens": 100, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}
    assert read_usage("deepseek", {"usage": usage}) == Usage(100, 64, 0)
    # DeepSeek reached through the plain openai protocol keeps its own rule.
    assert read_usage("openai", {"usage": usage}) == Usage(100, 64, 0)


@pytest.mark.parametrize(
    ("protocol", "response", "reason"),
    [
        ("openai", {}, "missing"),
        ("openai", {"usage": None}, "missing"),
        ("openai", "not an object", "no_response"),
        ("openai", {"usage": []}, "invalid"),
        ("openai", {"usage": {"prompt_tokens": 10}}, "missing"),
        ("openai", {"usage": {"prompt_tokens": -1, "prompt_tokens_details": {"cached_tokens": 0}}}, "negative"),
        ("openai", {"usage": {"prompt_tokens": "10", "prompt_tokens_details": {"cached_tokens": 0}}}, "non_numeric"),
        ("openai", {"usage": {"prompt_tokens": True, "prompt_tokens_details": {"cached_tokens": 0}}}, "non_numeric"),
        ("openai", {"usage": {"prompt_tokens": 1.5, "prompt_tokens_details": {"cached_tokens": 0}}}, "non_numeric"),
        ("openai", {"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 11}}}, "inconsistent"),
        ("openai", {"usage": {"prompt_tokens": 2**60, "prompt_tokens_details": {"cached_tokens": 0}}}, "overflow"),
        ("responses", {"usage": {"input_tokens": 10}}, "missing"),
        ("anthropic", {"usage": {"input_tokens": 10, "cache_read_input_tokens": 5}}, "missing"),
        (
            "anthropic",
            {"usage": {"input_tokens": 1, "cache_read_input_tokens": -5, "cache_creation_input_tokens": 0}},
            "negative",
        ),
        ("deepseek", {"usage": {"prompt_cache_hit_tokens": 5, "prompt_cache_miss_tokens": "x"}}, "non_numeric"),
        (
            "deepseek",
            {"usage": {"prompt_tokens": 9, "prompt_cache_hit_tokens": 5, "prompt_cache_miss_tokens": 5}},
            "inconsistent",
        ),
        ("custom", {"usage": {"prompt_tokens": 1}}, "unsupported_protocol"),
    ],
)
def test_bad_usage_is_unknown_with_a_reason(protocol: str, response: Any, reason: str) -> None:
    with pytest.raises(UnknownUsage) as caught:
        read_usage(protocol, response)
    assert caught.value.reason == reason


_values = st.one_of(st.integers(-10, 10**6), st.floats(allow_nan=True), st.text(max_size=3), st.none(), st.booleans())


@given(
    st.dictionaries(
        st.sampled_from(["input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"]), _values
    )
)
def test_anthropic_parser_never_invents_counts(usage: dict[str, Any]) -> None:
    try:
        found = read_usage("anthropic", {"usage": usage})
    except UnknownUsage:
        return
    # Known only when all three were valid whole non-negative numbers.
    assert found.input_tokens == sum(int(usage[k]) for k in usage)
    assert found.cache_read_tokens == int(usage["cache_read_input_tokens"])
    assert all(not isinstance(v, bool) and v >= 0 for v in usage.values())


# OpenRouter's and Bedrock's Responses figures as recorded (4,012 and 43 tokens written).
@pytest.mark.parametrize(
    ("protocol", "usage", "expected"),
    [
        (
            "responses",
            {"input_tokens": 4100, "output_tokens": 9, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 4012}},
            Usage(4100, 0, 4012),
        ),
        (
            "responses",
            {"input_tokens": 60, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 43}},
            Usage(60, 10, 43),
        ),
        (
            "openai",
            {"prompt_tokens": 500, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": 300}},
            Usage(500, 100, 300),
        ),
        (
            "openai",
            {"prompt_tokens": 500, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 100, "cache_write_tokens": None}},
            Usage(500, 100, 0),
        ),
    ],
)  # fmt: skip
def test_cache_write_tokens_are_creation_inside_the_total_and_no_hit(
    protocol: str, usage: Any, expected: Usage
) -> None:
    assert read_usage(protocol, {"usage": usage}) == expected


@pytest.mark.parametrize(
    ("protocol", "usage"),
    [
        ("responses", {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 10, "cache_write_tokens": 43}}),
        ("openai", {"prompt_tokens": 50, "prompt_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 51}}),
    ],
)
def test_cache_writes_and_reads_beyond_the_total_are_inconsistent(protocol: str, usage: Any) -> None:
    with pytest.raises(UnknownUsage) as caught:
        read_usage(protocol, {"usage": usage})
    assert caught.value.reason == "inconsistent"
