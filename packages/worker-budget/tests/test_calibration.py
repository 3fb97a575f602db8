from __future__ import annotations

import orjson

from i_budget import estimate_budget
from i_budget.calibration import (
    MARGIN,
    MAX_SAMPLES,
    MIN_SAMPLES,
    calibration_path,
    load_calibration,
    observation_ratio,
    record_observation,
)
from i_budget.estimate import Observation


def obs(ratio: float, n: int, model: str = "m", size: int = 40_000) -> Observation:
    return Observation(model, f"sha256:{n:064x}", size, 0, round(size / ratio))


def test_ratio_is_the_lowest_sample_once_there_are_enough(tmp_path):
    path = calibration_path(tmp_path)
    for n, ratio in enumerate([4.2, 3.6, 3.9]):
        assert load_calibration(path, "m").ratio is None  # still learning
        assert record_observation(path, obs(ratio, n)) == "recorded"
    learned = load_calibration(path, "m")
    assert learned.samples == MIN_SAMPLES
    assert abs(learned.ratio - 3.6 * MARGIN) < 0.01
    assert load_calibration(path, "other").ratio is None  # per model


def test_same_prefix_is_learned_once(tmp_path):
    path = calibration_path(tmp_path)
    assert record_observation(path, obs(4.0, 1)) == "recorded"
    assert record_observation(path, obs(4.0, 1)).startswith("known")
    assert load_calibration(path, "m").samples == 1


def test_samples_are_bounded(tmp_path):
    path = calibration_path(tmp_path)
    for n in range(MAX_SAMPLES + 10):
        record_observation(path, obs(4.0 if n else 1.5, n))
    learned = load_calibration(path, "m")
    assert learned.samples == MAX_SAMPLES
    assert learned.ratio == 4.0 * MARGIN  # the oldest (1.5) sample has rotated out


def test_small_or_implausible_observations_are_not_learned(tmp_path):
    assert observation_ratio(Observation("m", "fp", 100, 0, 25)) is None
    assert observation_ratio(Observation("m", "fp", 40_000, 0, 1)) is None  # 40000 bytes per token
    assert observation_ratio(Observation("m", "fp", 30_000, 10_000, 9_000)) is None  # mostly non-ASCII
    assert record_observation(calibration_path(tmp_path), Observation("m", "fp", 100, 0, 25)).startswith("skipped")


def test_corrupt_file_is_reported_and_replaced(tmp_path):
    path = calibration_path(tmp_path)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{not json")
    learned = load_calibration(path, "m")
    assert learned.ratio is None and "not valid JSON" in (learned.detail or "")
    assert record_observation(path, obs(4.0, 1)) == "recorded"
    assert orjson.loads(path.read_bytes())["models"]["m"]["samples"]


def test_calibrated_estimate_never_below_the_lower_bound_ratio(build, history_of):
    data = build(history=history_of(turns=10), tools=[])
    plain = estimate_budget(data).result
    calibrated = estimate_budget(data, bytes_per_token=3.5).result
    assert calibrated["estimate_method"] == "calibrated"
    assert calibrated["estimate"] >= plain["breakdown"]["message_tokens"] / 3.5
    assert calibrated["estimate"] < plain["estimate"]
    assert calibrated["comparable_estimate"] == plain["comparable_estimate"]
    # Non-ASCII bytes are never discounted by the learned ratio.
    cjk = build(history=[{"role": "system", "content": "你好" * 1_000}], tools=[])
    assert estimate_budget(cjk, bytes_per_token=4.0).result["estimate"] >= 6_000
    # Tool output budgets are given in the estimator's units: bytes = tokens * ratio.
    tool = calibrated["tool_output_budget"]
    assert tool["per_call_bytes"] == int(tool["per_call_tokens"] * 3.5)


def test_learned_ratio_is_not_applied_on_top_of_an_anchor(build, history_of):
    history = history_of(turns=6)
    first = estimate_budget(build(history=history)).result
    usage = {**first["anchor"], "input_tokens": 500, "output_tokens": 20}
    grown = [*history, {"role": "assistant", "content": "ok"}, {"role": "tool", "tool_call_id": "x", "content": "t" * 900}]
    plain = estimate_budget(build(history=grown, usage=usage)).result
    learned = estimate_budget(build(history=grown, usage=usage), bytes_per_token=4.0, observe=True)
    assert learned.result["estimate_method"] == "usage_anchor"
    assert learned.result["estimate"] == plain["estimate"]
    assert learned.result["bytes_per_token"] == 1.0
    assert learned.observation is not None and learned.observation.input_tokens == 500
