"""End to end: the real ``i-cache`` process over NDJSON."""

from __future__ import annotations

import re
from typing import Any

import orjson
import pytest

from i_protocol import ErrorFrame

from .conftest import EXE, Env, chat_body, request_data


def openai_usage(total: int, cached: int) -> dict[str, Any]:
    return {
        "usage": {"prompt_tokens": total, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": cached}}
    }


def test_version_and_help() -> None:
    import subprocess

    out = subprocess.run([str(EXE), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("i-worker-cache ")
    assert "i-protocol" in out


def test_observe_adds_no_provider_fields_but_prepares(env: Env) -> None:
    w = env.spawn()
    body = chat_body(2)
    out = env.call(w, "before_request", request_data(body))
    assert out["body"] == body
    cache = out["request_meta"]["cache"]
    assert cache["prepared"] is True
    assert cache["classification"] == "new"
    assert cache["added"] == []
    assert re.fullmatch(r"[0-9a-f]{32}", cache["request_id"])
    assert out["url"] == "http://127.0.0.1:9/v1/chat"
    assert env.stats()["totals"]["prepared"] == 1


def test_openai_mode_adds_a_stable_64_char_key_and_retention(env: Env) -> None:
    env.config({"mode": "openai", "namespace": "work", "retention": "24h"})
    w = env.spawn()
    first = env.call(w, "before_request", request_data(chat_body(1)))["body"]
    second = env.call(w, "before_request", request_data(chat_body(2)))["body"]
    assert re.fullmatch(r"[0-9a-f]{64}", first["prompt_cache_key"])
    assert first["prompt_cache_key"] == second["prompt_cache_key"]
    assert first["prompt_cache_retention"] == "24h"
    # A new process derives the same key: it depends on namespace and workspace only.
    again = env.call(env.spawn(), "before_request", request_data(chat_body(5)))["body"]
    assert again["prompt_cache_key"] == first["prompt_cache_key"]
    env.config({"mode": "openai", "namespace": "other"})
    other = env.call(env.spawn(), "before_request", request_data(chat_body(1)))["body"]
    assert other["prompt_cache_key"] != first["prompt_cache_key"]
    assert "prompt_cache_retention" not in other


def test_existing_fields_are_never_overwritten(env: Env) -> None:
    env.config({"mode": "openai", "retention": "in_memory"})
    body = chat_body(1) | {"prompt_cache_key": "mine", "prompt_cache_retention": "24h"}
    out = env.call(env.spawn(), "before_request", request_data(body))
    assert out["body"]["prompt_cache_key"] == "mine"
    assert out["body"]["prompt_cache_retention"] == "24h"
    assert out["request_meta"]["cache"]["kept"] == ["prompt_cache_key", "prompt_cache_retention"]
    env.config({"mode": "anthropic", "ttl": "1h"})
    ab = {"model": "c", "system": "S", "messages": [{"role": "user", "content": "hi"}], "cache_control": {"x": 1}}
    out = env.call(env.spawn(), "before_request", request_data(ab, protocol="anthropic"))
    assert out["body"]["cache_control"] == {"x": 1}


def test_anthropic_mode_adds_top_level_ephemeral_cache_control(env: Env) -> None:
    env.config({"mode": "anthropic", "ttl": "5m"})
    body = {"model": "c", "system": "S", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    out = env.call(env.spawn(), "before_request", request_data(body, protocol="anthropic", model="c"))
    assert out["body"]["cache_control"] == {"type": "ephemeral", "ttl": "5m"}
    assert out["body"]["messages"] == body["messages"]
    env.config({"mode": "anthropic"})
    out = env.call(env.spawn(), "before_request", request_data(body, protocol="anthropic", model="c"))
    assert out["body"]["cache_control"] == {"type": "ephemeral"}


def test_unowned_fields_are_preserved(env: Env) -> None:
    data = request_data(chat_body(1), budget={"x": 1}) | {"extra": [1, 2]}
    data["request_meta"]["trace"] = "t1"
    out = env.call(env.spawn(), "before_request", data)
    assert out["extra"] == [1, 2]
    assert out["request_meta"]["trace"] == "t1"
    assert out["request_meta"]["budget"] == {"x": 1}


def test_enabled_false_passes_everything_through_unchanged(env: Env) -> None:
    env.config({"mode": "openai", "enabled": False})
    w = env.spawn()
    data = request_data(chat_body(1))
    assert env.call(w, "before_request", data) == data
    retry = {"request_meta": {"cache": {"request_id": "x"}}, "attempt": 2}
    assert env.call(w, "request_retry", retry) == retry
    response = {"protocol": "openai", "response": {"usage": {}}, "request_meta": {}}
    assert env.call(w, "after_response", response) == response
    assert not env.stats_path().exists()


def test_classification_sequence_in_one_stream(env: Env) -> None:
    w = env.spawn()
    kinds = []
    for body in (chat_body(2), chat_body(3), chat_body(4)):
        kinds.append(env.call(w, "before_request", request_data(body))["request_meta"]["cache"]["classification"])
    compacted = chat_body(4)
    msgs = compacted["messages"]
    compacted["messages"] = [msgs[0], {"role": "user", "content": "summary"}, *msgs[5:]]
    kinds.append(env.call(w, "before_request", request_data(compacted))["request_meta"]["cache"]["classification"])
    fresh = {"messages": [msgs[0], {"role": "user", "content": "a new task"}]}
    kinds.append(env.call(w, "before_request", request_data(fresh))["request_meta"]["cache"]["classification"])
    assert kinds == ["new", "append", "append", "compact", "reset"]
    # A different system prompt is a different stream.
    other = env.call(w, "before_request", request_data(chat_body(2, system="Another")))["request_meta"]["cache"]
    assert other["classification"] == "new"
    stats = env.stats()
    assert stats["by_classification"]["append"]["prepared"] == 2
    assert len(stats["streams"]) == 2


def test_request_meta_stream_is_used_when_the_core_sends_one(env: Env) -> None:
    w = env.spawn()
    a = env.call(w, "before_request", request_data(chat_body(1), stream="session-1"))["request_meta"]["cache"]
    b = env.call(w, "before_request", request_data(chat_body(2, system="changed"), stream="session-1"))
    assert a["stream"] == "session-1"
    assert b["request_meta"]["cache"]["classification"] == "reset"


def test_append_survives_a_worker_restart(env: Env) -> None:
    env.call(env.spawn(), "before_request", request_data(chat_body(3)))
    cache = env.call(env.spawn(), "before_request", request_data(chat_body(4)))["request_meta"]["cache"]
    assert cache["classification"] == "append"


def test_retry_and_response_are_counted(env: Env) -> None:
    w = env.spawn()
    out = env.call(w, "before_request", request_data(chat_body(1)))
    meta = out["request_meta"]
    retry = {"request_meta": meta, "attempt": 2, "reason": "HTTP 503"}
    assert env.call(w, "request_retry", retry) == retry
    env.call(w, "request_retry", {"request_meta": meta, "attempt": 3, "reason": "timeout"})
    got = env.call(
        w, "after_response", {"protocol": "openai", "response": openai_usage(1000, 900), "request_meta": meta}
    )
    assert got["request_meta"]["cache"]["observed"]["usage_status"] == "known"
    stats = env.stats()
    totals = stats["totals"]
    assert (totals["prepared"], totals["preparations"], totals["retries"]) == (1, 3, 2)
    assert (totals["observed"], totals["known"], totals["unknown"]) == (1, 1, 0)
    assert (totals["input_tokens"], totals["cache_read_tokens"]) == (1000, 900)
    record = stats["records"][-1]
    assert record["preparations"] == 3 and record["status"] == "observed"
    # The same response reported twice is not counted twice.
    env.call(w, "after_response", {"protocol": "openai", "response": openai_usage(1000, 900), "request_meta": meta})
    assert env.stats()["totals"]["observed"] == 1
    assert env.stats()["totals"]["duplicate_responses"] == 1


@pytest.mark.parametrize(
    "response",
    [
        {"choices": []},
        {"usage": {"prompt_tokens": -5, "prompt_tokens_details": {"cached_tokens": 0}}},
        {"usage": {"prompt_tokens": "many", "prompt_tokens_details": {"cached_tokens": 0}}},
    ],
)
def test_missing_or_invalid_usage_is_unknown_not_zero(env: Env, response: dict[str, Any]) -> None:
    w = env.spawn()
    meta = env.call(w, "before_request", request_data(chat_body(1)))["request_meta"]
    env.call(w, "after_response", {"protocol": "openai", "response": response, "request_meta": meta})
    totals = env.stats()["totals"]
    assert totals["unknown"] == 1 and totals["known"] == 0
    assert totals["input_tokens"] == 0
    record = env.stats()["records"][-1]
    assert record["usage"] is None and record["usage_status"] == "unknown"


def test_stats_hold_no_prompt_text_or_credentials(env: Env) -> None:
    env.config({"mode": "openai"})
    w = env.spawn()
    body = chat_body(2, system="SECRET-SYSTEM-PROMPT")
    body["messages"].append({"role": "tool", "tool_call_id": "c1", "content": "TOOL-BODY-TEXT"})
    body["api_key"] = "sk-THE-CREDENTIAL"
    meta = env.call(w, "before_request", request_data(body))["request_meta"]
    env.call(w, "after_response", {"protocol": "openai", "response": openai_usage(10, 0), "request_meta": meta})
    raw = env.stats_path().read_bytes()
    for needle in (b"SECRET-SYSTEM-PROMPT", b"TOOL-BODY-TEXT", b"sk-THE-CREDENTIAL", b"question 0"):
        assert needle not in raw


def test_custom_stats_path_is_relative_to_the_state_root(env: Env) -> None:
    env.config({"stats": "metrics/smoke-cache.json"})
    env.call(env.spawn(), "before_request", request_data(chat_body(1)))
    assert env.stats_path("metrics/smoke-cache.json").exists()
    assert not env.stats_path().exists()


@pytest.mark.parametrize("stats", ["/tmp/x.json", "../x.json"])
def test_escaping_stats_path_is_an_error_frame(env: Env, stats: str) -> None:
    env.config({"stats": stats})
    with pytest.raises(ErrorFrame, match="stats"):
        env.call(env.spawn(), "before_request", request_data(chat_body(1)))


def test_invalid_config_is_an_error_frame(env: Env) -> None:
    env.config({"mode": "openai", "ttl": "5m"})
    with pytest.raises(ErrorFrame, match="ttl"):
        env.call(env.spawn(), "before_request", request_data(chat_body(1)))


def test_bad_request_data_is_an_error_frame(env: Env) -> None:
    with pytest.raises(ErrorFrame, match="body"):
        env.call(env.spawn(), "before_request", {"protocol": "openai", "model": "m"})


@pytest.mark.parametrize("damage", [b'{"version": 1, "totals": {', b"", b"[1, 2]", b'{"version": 1}'])
def test_corrupt_stats_file_is_reported_and_set_aside(env: Env, damage: bytes) -> None:
    w = env.spawn()
    env.call(w, "before_request", request_data(chat_body(1)))
    path = env.stats_path()
    path.write_bytes(damage)
    with pytest.raises(ErrorFrame, match="corrupt") as caught:
        env.call(w, "before_request", request_data(chat_body(2)))
    aside = list(path.parent.glob("cache-stats.json.corrupt-*"))
    assert len(aside) == 1
    assert aside[0].name in str(caught.value)
    assert aside[0].read_bytes() == damage
    assert not path.exists()  # not silently replaced by an empty file in the same step
    # The next request starts a new file; the damaged one stays for inspection.
    env.call(env.spawn(), "before_request", request_data(chat_body(2)))
    assert env.stats()["totals"]["prepared"] == 1
    assert aside[0].exists()


def test_records_and_streams_are_bounded(env: Env) -> None:
    w = env.spawn()
    for i in range(260):
        env.call(w, "before_request", request_data({"messages": [{"role": "system", "content": f"s{i}"}]}))
    stats = env.stats()
    assert len(stats["records"]) == 200
    assert len(stats["streams"]) == 256
    assert stats["totals"]["prepared"] == 260
    kept = {r["stream"] for r in stats["records"]}
    assert kept <= set(stats["streams"])  # the newest streams are the ones kept
    assert orjson.loads(env.stats_path().read_bytes())["records"][-1]["classification"] == "new"


def test_responses_protocol_is_fingerprinted_on_instructions_and_input(env: Env) -> None:
    env.config({"mode": "openai"})
    w = env.spawn()
    items = [{"role": "user", "content": "hello"}]
    first = env.call(w, "before_request", request_data({"instructions": "I", "input": items}, protocol="responses"))
    items2 = [*items, {"type": "message", "role": "assistant", "content": "hi"}, {"role": "user", "content": "more"}]
    second = env.call(w, "before_request", request_data({"instructions": "I", "input": items2}, protocol="responses"))
    assert first["request_meta"]["cache"]["classification"] == "new"
    assert second["request_meta"]["cache"]["classification"] == "append"
    assert len(second["body"]["prompt_cache_key"]) == 64
    third = env.call(w, "before_request", request_data({"instructions": "J", "input": items2}, protocol="responses"))
    assert third["request_meta"]["cache"]["classification"] == "new"  # another system prompt, another stream
