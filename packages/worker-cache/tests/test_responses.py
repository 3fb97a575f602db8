"""The cache worker on the OpenAI Responses API: the request as the `responses` module builds it
(instructions + input items), the response object the core hands to after_response (a JSON answer,
or a stream's final response), and a compaction seen on input items."""

from __future__ import annotations

from typing import Any

from .conftest import Env, request_data


def wire(*items: dict[str, Any]) -> dict[str, Any]:
    """A Responses request the way the `responses` module sends it."""
    return {"model": "m1", "instructions": "be brief", "input": list(items), "store": False,
            "include": ["reasoning.encrypted_content"], "max_output_tokens": 64}  # fmt: skip


def user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": text}


def answer(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "assistant", "content": text}


def response(input_tokens: int, cached: int) -> dict[str, Any]:
    """A completed Responses object (as a JSON answer, and as a stream's final event carries it)."""
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "ok"}]}],
        "usage": {
            "input_tokens": input_tokens,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": 3,
            "total_tokens": input_tokens + 3,
        },
    }


def test_a_responses_exchange_is_prepared_and_observed_with_its_cached_tokens(env: Env) -> None:
    env.config({"mode": "openai", "namespace": "r"})
    worker = env.spawn()
    prepared = env.call(worker, "before_request", request_data(wire(user("hello")), protocol="responses"))
    body, meta = prepared["body"], prepared["request_meta"]
    assert len(body["prompt_cache_key"]) == 64 and body["input"] == [user("hello")]  # nothing else touched
    assert meta["cache"]["prefix"]["messages"] == 1  # input items, the instructions apart
    observed = env.call(
        worker, "after_response", {"protocol": "responses", "request_meta": meta, "response": response(1200, 1024)}
    )
    assert observed["request_meta"]["cache"]["observed"]["usage"] == {
        "input_tokens": 1200,
        "cache_read_tokens": 1024,
        "cache_creation_tokens": 0,
    }
    record = env.stats()["records"][-1]
    assert record["usage_status"] == "known" and record["protocol"] == "responses"


def test_a_history_reply_is_not_a_responses_usage(env: Env) -> None:
    """Why the cache observes ahead of the `responses` module: after it, the answer is no longer the
    provider's, and its usage cannot be read by the Responses rule (unknown, never 0)."""
    env.config({"mode": "observe"})
    worker = env.spawn()
    prepared = env.call(worker, "before_request", request_data(wire(user("hello")), protocol="responses"))
    converted = {"message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop",
                 "usage": {"input_tokens": 1200, "output_tokens": 3, "cache_read_tokens": 1024}}  # fmt: skip
    env.call(worker, "after_response", {"protocol": "responses", **prepared, "response": converted})
    record = env.stats()["records"][-1]
    assert record["usage_status"] == "unknown" and record["unknown_reason"] == "missing"


def test_a_compaction_of_the_input_items_is_classified_as_one(env: Env) -> None:
    env.config({"mode": "openai"})
    worker = env.spawn()
    turns = [user("one " * 50), answer("a"), user("two " * 50), answer("b"), user("three " * 50), answer("c")]
    kinds = []
    for body in (
        wire(*turns[:1]),
        wire(*turns[:3]),
        wire(*turns[:5]),
        wire(user("<continuation_summary>one and two</continuation_summary>"), *turns[4:], user("four")),
    ):
        prepared = env.call(worker, "before_request", request_data(body, protocol="responses"))
        kinds.append(prepared["request_meta"]["cache"]["classification"])
    assert kinds == ["new", "append", "append", "compact"]
