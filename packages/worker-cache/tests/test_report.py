"""``i-cache report``: the observed hit ratio, breakdowns and when target_met is null."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from i_cache.report import build_report, render_table
from i_cache.settings import CacheSettings
from i_cache.stats import empty_stats

from .conftest import Env, chat_body, request_data

ANTHROPIC = {"usage": {"input_tokens": 10, "cache_read_input_tokens": 800, "cache_creation_input_tokens": 190}}
OPENAI = {"usage": {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 900}}}
DEEPSEEK = {"usage": {"prompt_tokens": 100, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}}


def exchange(env: Env, worker: Any, protocol: str, body: dict[str, Any], response: Any) -> dict[str, Any]:
    meta = env.call(worker, "before_request", request_data(body, protocol=protocol))["request_meta"]
    if response is not None:
        env.call(worker, "after_response", {"protocol": protocol, "response": response, "request_meta": meta})
    return meta


def test_report_without_stats_has_null_target(env: Env) -> None:
    report = env.report_json()
    assert report["schema"] == "i-cache-report/1"
    assert report["stats_exists"] is False
    assert report["observed_token_hit_ratio"] is None
    assert report["target_met"] is None
    assert report["target_hit_ratio"] == 0.99
    assert report["workspace"] == str(env.project.resolve())


def test_ratio_follows_each_provider_rule(env: Env) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    exchange(env, w, "openai", chat_body(2), OPENAI)
    anthropic_body = {"system": "S", "messages": [{"role": "user", "content": "hi"}]}
    exchange(env, w, "anthropic", anthropic_body, ANTHROPIC)
    exchange(env, w, "deepseek", chat_body(1, system="ds"), DEEPSEEK)
    report = env.report_json()
    # Σ read / Σ input = (900 + 900 + 800 + 64) / (1000 + 1000 + 1000 + 100); creation is no hit.
    assert report["observed_token_hit_ratio"] == pytest.approx(2664 / 3100)
    assert report["totals"]["cache_creation_tokens"] == 190
    assert report["target_met"] is False
    assert report["target_met_null_reason"] is None
    protocols = report["by_protocol"]
    assert protocols["anthropic"]["observed_token_hit_ratio"] == pytest.approx(0.8)
    assert protocols["deepseek"]["input_tokens"] == 100
    assert protocols["openai"]["prepared"] == 2
    classes = report["by_classification"]
    assert list(classes) == ["new", "append", "reset", "compact"]
    assert classes["append"]["observed"] == 1
    assert classes["append"]["observed_token_hit_ratio"] == pytest.approx(0.9)
    assert classes["new"]["prepared"] == 3
    assert report["totals"]["pending"] == 0


def test_the_report_counts_the_requests_its_verdict_stands_on(env: Env) -> None:
    assert env.report_json()["requests"] == 0
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    one = env.report_json()
    assert one["requests"] == 1 and one["target_met"] is False  # seed 001 §8: known usage, nothing pending
    env.call(w, "after_response", {"protocol": "openai", "response": OPENAI, "request_meta": {}})  # unprepared
    exchange(env, w, "openai", chat_body(2), OPENAI)
    assert env.report_json()["requests"] == 3


def test_target_met_true_with_a_lower_target_from_explicit_config(env: Env, tmp_path: Any) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    other = tmp_path / "elsewhere.json"
    other.write_bytes(orjson.dumps({"target_hit_ratio": 0.9}))
    assert env.report_json("--config", str(other))["target_met"] is True
    assert env.report_json()["target_met"] is False


def test_unknown_usage_makes_target_met_null(env: Env) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    exchange(env, w, "openai", chat_body(2), {"choices": []})
    report = env.report_json("--config", str(env.config({"target_hit_ratio": 0.5})))
    assert report["observed_token_hit_ratio"] == pytest.approx(0.9)
    assert report["target_met"] is None
    assert "unknown usage" in report["target_met_null_reason"]
    assert report["totals"]["unknown_reasons"] == {"missing": 1}


def test_prepared_without_observed_response_makes_target_met_null(env: Env) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    exchange(env, w, "openai", chat_body(2), None)
    env.config({"target_hit_ratio": 0.5})
    report = env.report_json()
    assert report["totals"]["pending"] == 1
    assert report["target_met"] is None
    assert "no observed response" in report["target_met_null_reason"]


def test_human_table_is_the_default(env: Env) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    done = env.report()
    assert done.returncode == 0, done.stderr
    assert "observed token hit ratio: 90.00%" in done.stdout
    assert "target 99.00%: NOT met over 1 request" in done.stdout
    assert "protocol openai" in done.stdout
    assert not done.stdout.lstrip().startswith("{")


def test_corrupt_stats_is_reported_by_the_report_and_left_in_place(env: Env) -> None:
    w = env.spawn()
    exchange(env, w, "openai", chat_body(1), OPENAI)
    env.stats_path().write_bytes(b'{"version": 1, "tot')
    done = env.report("--json")
    assert done.returncode == 1
    assert "corrupt" in done.stderr
    assert done.stdout == ""
    assert env.stats_path().exists()


def test_invalid_config_is_a_usage_error(env: Env) -> None:
    env.config({"stats": "../../etc/passwd"})
    done = env.report()
    assert done.returncode == 2
    assert "'..'" in done.stderr


def test_render_table_of_an_empty_report() -> None:
    report = build_report(empty_stats(), CacheSettings(), workspace="/p", workspace_id="x", stats_file="/s")
    text = render_table(report)
    assert "observed token hit ratio: n/a" in text
    assert "unknown" in text


def test_compaction_summary_requests_are_counted_ahead_and_at_the_trigger(env: Env) -> None:
    w = env.spawn()

    def summary(prepared: bool, session: str) -> None:
        data = request_data(chat_body(1, system="summarise"))
        data["request_meta"] = {
            "kind": "summary",
            "session": session,
            "request": 1,
            **({"prepared": True} if prepared else {}),
        }
        meta = env.call(w, "before_request", data)["request_meta"]
        env.call(w, "after_response", {"protocol": "openai", "response": OPENAI, "request_meta": meta})

    summary(True, "s1")
    summary(True, "s1")
    summary(False, "s2")
    exchange(env, w, "openai", chat_body(2), OPENAI)  # a conversation request: not a summary
    report = env.report_json()
    made = report["summaries"]
    assert made["ahead"] == {"requests": 2, "known": 2, "input_tokens": 2000, "cache_read_tokens": 1800}
    assert made["at_trigger"]["requests"] == 1 and made["at_trigger"]["input_tokens"] == 1000
    assert made["sessions"] == 2
    table = env.report().stdout
    assert "compaction summary requests: 2 made ahead of the trigger (2000 input tokens), 1 at the trigger" in table
