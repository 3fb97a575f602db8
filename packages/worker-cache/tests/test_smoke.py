"""``i-cache smoke``: the smoke profiles' cache, observe only with statistics in
metrics/smoke-cache.json, whatever cache.json says (seed 001 §10)."""

from __future__ import annotations

from .conftest import Env, chat_body, request_data


def test_smoke_observes_and_keeps_its_statistics_apart(env: Env) -> None:
    env.config({"mode": "openai", "namespace": "work", "stats": "metrics/cache-stats.json"})
    worker = env.spawn("smoke")
    body = chat_body(1)
    prepared = env.call(worker, "before_request", request_data(body))
    assert prepared["body"] == body  # observe: no prompt_cache_key, although cache.json says openai
    usage = {"usage": {"prompt_tokens": 100, "completion_tokens": 3, "prompt_tokens_details": {"cached_tokens": 0}}}
    env.call(
        worker, "after_response", {"protocol": "openai", "response": usage, "request_meta": prepared["request_meta"]}
    )
    totals = env.stats("metrics/smoke-cache.json")["totals"]
    assert totals["prepared"] == 1 and totals["observed"] == 1 and totals["input_tokens"] == 100
    assert not env.stats_path().exists()  # the workload's own statistics are untouched


def test_smoke_ignores_a_cache_json_it_would_otherwise_refuse(env: Env) -> None:
    env.config({"mode": "nonsense", "enabled": False})
    worker = env.spawn("smoke")
    env.call(worker, "before_request", request_data(chat_body(1)))
    assert env.stats("metrics/smoke-cache.json")["totals"]["prepared"] == 1
