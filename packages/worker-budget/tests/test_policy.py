from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_budget import budget_result, parse_policy
from i_protocol import WorkerError


def test_default_trigger_is_80_percent_when_reserve_is_small():
    policy = parse_policy({"context_window": 100_000}, 4_000)
    assert policy.output_reserve == 4_000
    assert policy.safety_margin == 2_000
    assert policy.capacity == 100_000 - 4_000 - 2_000
    assert policy.trigger == 80_000
    assert policy.trigger_source == "default"


def test_default_trigger_is_capacity_when_reserve_is_large():
    policy = parse_policy({"context_window": 100_000, "output_reserve": 30_000}, 4_000)
    assert policy.output_reserve == 30_000  # explicit reserve wins over max_tokens
    assert policy.trigger == 100_000 - 30_000 - 2_000


@given(
    window=st.integers(1_000, 10_000_000),
    reserve_share=st.floats(0, 0.45),
    safety=st.floats(0, 0.49),
)
def test_default_trigger_formula(window: int, reserve_share: float, safety: float):
    reserve = int(window * reserve_share)
    margin = math.ceil(round(window * safety, 6))
    if window - reserve - margin < 1:
        return
    policy = parse_policy({"context_window": window, "safety_ratio": safety}, reserve)
    assert policy.trigger == min(window * 4 // 5, window - reserve - margin)
    assert 1 <= policy.trigger <= policy.capacity < window or reserve == margin == 0


def test_safety_margin_is_not_inflated_by_float_error():
    assert parse_policy({"context_window": 100_000, "safety_ratio": 0.02}, 0).safety_margin == 2_000


def test_threshold_sets_trigger_and_is_clamped_to_capacity():
    assert parse_policy({"context_window": 100_000, "threshold": 50_000}, 4_000).trigger == 50_000
    clamped = parse_policy({"context_window": 100_000, "threshold": 99_000}, 4_000)
    assert clamped.trigger == clamped.capacity == 94_000
    assert clamped.notes and "threshold" in clamped.notes[0]


@pytest.mark.parametrize(
    ("budget", "max_tokens", "fragment"),
    [
        ({}, 1000, "context_window is required"),
        ({"context_window": -5}, 10, "context_window must be an integer"),
        ({"context_window": 0}, 0, "context_window must be an integer"),
        ({"context_window": True}, 0, "context_window must be an integer"),
        ({"context_window": 128000.5}, 0, "context_window must be an integer"),
        ({"context_window": "128000"}, 0, "context_window must be an integer"),
        ({"context_window": 10**12}, 0, "context_window must be an integer"),
        ({"context_window": 1000, "output_reserve": -1}, 0, "output_reserve must be an integer"),
        ({"context_window": 1000, "output_reserve": 2000}, 0, "output_reserve must be an integer"),
        ({"context_window": 1000}, None, "max_tokens is missing"),
        ({"context_window": 1000}, -3, "max_tokens"),
        ({"context_window": 1000}, 5000, "max_tokens"),
        ({"context_window": 1000, "output_reserve": 990}, 0, "leaves no room for input"),
        ({"context_window": 1000, "safety_ratio": 0.5}, 0, "safety_ratio must be a number in [0.0, 0.5)"),
        ({"context_window": 1000, "safety_ratio": -0.01}, 0, "safety_ratio"),
        ({"context_window": 1000, "safety_ratio": "0.1"}, 0, "safety_ratio"),
        ({"context_window": 1000, "safety_ratio": float("nan")}, 0, "safety_ratio"),
        ({"context_window": 1000, "safety_ratio": True}, 0, "safety_ratio"),
        ({"context_window": 1000, "tool_output_ratio": 0}, 0, "tool_output_ratio must be greater than 0"),
        ({"context_window": 1000, "tool_output_ratio": 1.5}, 0, "tool_output_ratio"),
        ({"context_window": 1000, "threshold": 0}, 0, "threshold"),
        ({"context_window": 1000, "threshold": 5000}, 0, "threshold"),
        ({"context_window": 1000, "image_tokens": 0}, 0, "image_tokens"),
        ({"context_window": 1000, "image_tokens": -1}, 0, "image_tokens"),
        ({"context_window": 1000, "calibrate": "yes"}, 0, "calibrate"),
    ],
)
def test_policy_errors_are_clear(budget, max_tokens, fragment):
    with pytest.raises(WorkerError, match=None) as info:
        parse_policy(budget, max_tokens)
    assert fragment in str(info.value)


def test_budget_must_be_an_object():
    with pytest.raises(WorkerError, match="budget must be an object"):
        parse_policy(None, 100)


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "p50k_base", "r50k_base"])
def test_removed_bpe_tokenizers_are_errors_not_downgrades(name, build):
    data = build(budget={"context_window": 100_000, "tokenizer": name})
    with pytest.raises(WorkerError) as info:
        budget_result(data)
    message = str(info.value)
    assert name in message and "removed" in message and "utf8_bytes" in message


@pytest.mark.parametrize("name", ["gpt2", "", "UTF8_BYTES", 5])
def test_unknown_tokenizer_is_an_error(name, build):
    with pytest.raises(WorkerError, match="unknown"):
        budget_result(build(budget={"context_window": 100_000, "tokenizer": name}))


@pytest.mark.parametrize(
    "budget", [{"context_window": 100_000}, {"context_window": 100_000, "tokenizer": "utf8_bytes"}]
)
def test_omitted_or_utf8_bytes_tokenizer_is_the_byte_estimator(budget, build):
    result = budget_result(build(budget=budget))
    assert result["estimate_method"] == "utf8_bytes"
