"""The server's exact count of a request (extension ``exact_count``): an anchor covering the whole
request, checked like any usage, learned from, and ignored when it names another request."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from i_budget import estimate_budget
from i_protocol import WorkerError


def fingerprint(tools: list[dict[str, Any]]) -> str:
    return "sha256:" + hashlib.sha256(orjson.dumps(tools, option=orjson.OPT_SORT_KEYS)).hexdigest()


def counted(build, count: Any, **changes: Any) -> dict[str, Any]:
    data = build(origin="http://127.0.0.1:8080")
    exact = {
        "tokens": count,
        "origin": data["origin"],
        "model": data["model"],
        "tools_fingerprint": fingerprint(data["tools"]),
    }
    return {**data, "exact_count": {**exact, **changes}}


def test_an_exact_count_is_the_estimate_of_the_whole_request(build):
    plain = estimate_budget(build(origin="http://127.0.0.1:8080")).result
    result = estimate_budget(counted(build, 37)).result
    assert plain["estimate_method"] == "utf8_bytes" and plain["estimate"] > 37
    assert result["estimate_method"] == "exact_count" and result["estimate"] == 37
    assert result["breakdown"]["exact_tokens"] == 37 and result["provisional"] is False
    assert result["comparable_estimate"] == plain["comparable_estimate"]  # bytes, whatever counted the tokens


@pytest.mark.parametrize(
    "change", [{"model": "other"}, {"origin": "http://elsewhere:1"}, {"tools_fingerprint": "sha256:00"}]
)
def test_an_exact_count_of_another_request_is_not_used(build, change):
    result = estimate_budget(counted(build, 37, **change)).result
    assert result["estimate_method"] == "utf8_bytes" and result["estimate"] > 37
    assert any("exact_count is for another" in note for note in result["notes"])


def test_an_impossible_exact_count_is_not_used(build):
    result = estimate_budget(counted(build, 10_000_000)).result
    assert result["estimate_method"] == "utf8_bytes"
    assert any("over what" in note for note in result["notes"])


@pytest.mark.parametrize("tokens", [0, -3, True, "12", None])
def test_a_malformed_exact_count_is_an_error(build, tokens):
    with pytest.raises(WorkerError, match="exact_count must be"):
        estimate_budget(counted(build, tokens))


def test_an_exact_count_teaches_the_density_of_the_whole_request(build):
    seen: list[Any] = []

    def learn(observations):
        from i_budget.density import BYTES

        seen.extend(observations)
        return BYTES

    estimate_budget(counted(build, 37), learn=learn)
    assert [(o.source, o.tokens) for o in seen] == [("exact", 37)]
    assert sum(seen[0].classes) > 37
