"""cache.json validation."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_cache.errors import CacheError
from i_cache.settings import DEFAULT_STATS, CacheSettings, check_stats_path, parse_settings


def test_defaults() -> None:
    assert parse_settings({}) == CacheSettings()
    assert CacheSettings().stats == DEFAULT_STATS
    assert CacheSettings().target_hit_ratio == 0.99
    assert CacheSettings().mode == "observe"


def test_full_openai_and_anthropic_configs() -> None:
    s = parse_settings({"mode": "openai", "namespace": "w", "retention": "24h", "target_hit_ratio": 0.5})
    assert (s.mode, s.retention, s.target_hit_ratio) == ("openai", "24h", 0.5)
    s = parse_settings({"mode": "anthropic", "ttl": "1h", "stats": "metrics/other.json", "enabled": False})
    assert (s.mode, s.ttl, s.stats, s.enabled) == ("anthropic", "1h", "metrics/other.json", False)


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        ({"mode": "deepseek"}, 'mode must be one of observe, openai, anthropic, got "deepseek"'),
        ({"mode": "openai", "retention": "7d"}, "retention must be one of"),
        ({"mode": "observe", "retention": "24h"}, "mode 'openai' only"),
        ({"mode": "anthropic", "ttl": "10m"}, "ttl must be one of"),
        ({"mode": "openai", "ttl": "5m"}, "mode 'anthropic' only"),
        ({"stats": "/abs/stats.json"}, "relative"),
        ({"stats": "../escape.json"}, "'..'"),
        ({"stats": "metrics/../../escape.json"}, "'..'"),
        ({"stats": "C:\\stats.json"}, "relative"),
        ({"stats": ""}, "stats must be"),
        ({"stats": 3}, "stats must be"),
        ({"enabled": "no"}, 'enabled must be true or false, got "no"'),
        ({"namespace": ""}, "namespace must be a string of 1 to 256 characters"),
        ({"target_hit_ratio": 1.5}, "target_hit_ratio must be a number in [0, 1], got 1.5"),
        ({"target_hit_ratio": True}, "target_hit_ratio must be a number"),
        ({"target_hit_ratio": "0.9"}, "target_hit_ratio must be a number"),
        ({"target": 0.9}, "unknown field(s) target; known fields: enabled, mode"),
    ],
)
def test_invalid_fields_are_refused_with_the_field_named(data: dict[str, object], needle: str) -> None:
    with pytest.raises(CacheError, match=r"cache\.json") as caught:
        parse_settings(data)
    assert needle in str(caught.value)


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "x.json"]), min_size=1, max_size=6))
def test_stats_path_never_escapes_the_state_root(parts: list[str]) -> None:
    raw = "/".join(parts)
    try:
        cleaned = check_stats_path(raw)
    except CacheError:
        return
    assert ".." not in cleaned.split("/")
    assert not cleaned.startswith("/")
    assert cleaned
