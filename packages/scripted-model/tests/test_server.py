"""The server over raw HTTP: URLs, steps, wire checks, usage counted from the content, the output cap."""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from typing import Any

import orjson
import pytest
from scripted_http import PATHS, PROSE, chat, error_message, post, send, sse_events

from i_scripted import ScriptedModel, prompt_tokens, reference_tokens


def test_urls_follow_each_protocol_convention() -> None:
    with ScriptedModel([]) as model:
        assert model.base_url == model.root_url + "/v1"
        assert model.base_url_for("openai") == model.base_url_for("deepseek") == model.base_url
        assert model.base_url_for("anthropic") == model.root_url
        assert model.root_url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_an_exhausted_script_answers_500_with_a_clear_message(kind: str) -> None:
    with ScriptedModel([{"text": "one"}]) as model:
        assert send(model, kind, chat(kind, "hello there"))[0] == 200
        status, raw = send(model, kind, chat(kind, "hello there"))
    assert status == 500
    assert error_message(kind, raw) == "scripted model: script exhausted after 1 requests"


def test_a_callable_step_answers_from_the_request() -> None:
    seen: list[Any] = []

    def step(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"text": f"you said {request['messages'][-1]['content']}"}

    with ScriptedModel([step]) as model:
        status, raw = send(model, "openai", chat("openai", "hello there"))
    assert status == 200
    assert orjson.loads(raw)["choices"][0]["message"]["content"] == "you said hello there"
    assert seen[0]["model"] == "m"


def test_a_broken_callable_is_reported_not_hung() -> None:
    with ScriptedModel([lambda _r: {"bogus": 1}]) as model:
        status, raw = send(model, "openai", chat("openai", "hello there"))
    assert status == 500
    assert re.search(r"step failed: .*unknown field", error_message("openai", raw))


def test_unknown_paths_name_the_served_endpoints() -> None:
    with ScriptedModel([{"text": "x"}]) as model:
        status, raw = post(model.root_url, "/v1/v1/messages", {"model": "m"})
        assert status == 404
        assert re.search(
            r"nothing is served at /v1/v1/messages.*/v1/messages \(base_url is the root\)", error_message("openai", raw)
        )
        assert model.served == 0


@pytest.mark.parametrize(
    ("path", "body", "headers", "problem"),
    [
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x", "_private": 1}]},
            {},
            r"messages\[0\] carries private field\(s\) _private",
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "tool", "tool_call_id": "c9", "content": "x"}]},
            {},
            "tool_call_id 'c9' answers no pending tool call",
        ),
        (
            "/v1/chat/completions",
            {
                "model": "m",
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "n", "arguments": "{}"}}],
                    },
                    {"role": "user", "content": "x"},
                ],
            },
            {},
            "tool call.*c1 have no result",
        ),
        (
            "/v1/chat/completions",
            {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream_options": {}},
            {},
            "stream_options is only allowed",
        ),
        ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}, {}, "model is missing"),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}]},
            {},
            "anthropic-version header is missing",
        ),
        (
            "/v1/messages",
            {"model": "m", "messages": [{"role": "user", "content": "x"}]},
            {"anthropic-version": "v"},
            "max_tokens is required",
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}],
            },
            {"anthropic-version": "v"},
            "roles must alternate",
        ),
        (
            "/v1/messages",
            {"model": "m", "max_tokens": 5, "messages": [{"role": "system", "content": "a"}]},
            {"anthropic-version": "v"},
            "system goes top-level",
        ),
        (
            "/v1/messages",
            {
                "model": "m",
                "max_tokens": 5,
                "messages": [
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "n", "input": {}}]},
                    {"role": "user", "content": "no result"},
                ],
            },
            {"anthropic-version": "v"},
            r"tool_use id\(s\) \['t1'\] have no tool_result",
        ),
    ],
)
def test_wire_mistakes_are_rejected_like_a_real_provider(
    path: str, body: dict[str, Any], headers: dict[str, str], problem: str
) -> None:
    kind = {wire_path: kind for kind, wire_path in PATHS.items()}[path]
    with ScriptedModel([{"text": "x"}]) as model:
        status, raw = post(model.root_url, path, body, headers)
        assert status == 400
        assert re.search(problem, error_message(kind, raw))
        assert model.served == 0  # a rejected request does not consume a step


CHINESE = (  # real Chinese punctuation: full-width commas and stops
    "图书馆在傍晚时分格外安静，阳光从高高的窗户斜照进来。大多数读者已经回家了，只有几个学生还在埋头看笔记，"  # noqa: RUF001
    "想在闭馆之前读完这一章。没有人说话，只有翻书的声音，偶尔还有椅子轻轻挪动的响声。铃声终于响起时，"  # noqa: RUF001
    "他们收拾好书本，在门口向管理员道谢，然后一起走进夜色里，谈论着周末就要到来的考试。"  # noqa: RUF001
)


def id_json(rows: int = 120) -> str:
    """Tool output dense in ids: uuids, hex shas, call ids, paths, sizes, timestamps."""
    rng = random.Random(11)
    return orjson.dumps(
        [
            {
                "id": str(uuid.UUID(int=rng.getrandbits(128))),
                "sha": hashlib.sha1(str(n).encode()).hexdigest(),
                "call_id": f"call_{rng.getrandbits(64):016x}",
                "path": f"src/pkg{rng.randint(1, 99)}/mod_{rng.randint(1, 999)}.py",
                "size": rng.randint(10, 10**6),
                "mtime": 1_700_000_000 + rng.randint(0, 10**7),
            }
            for n in range(rows)
        ]
    ).decode()


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_reported_usage_density_depends_on_the_content(kind: str) -> None:
    texts = {"prose": PROSE * 8, "json": id_json(), "chinese": CHINESE * 10}
    with ScriptedModel([{"text": "ok"}] * 3) as model:
        density = {}
        for name, text in texts.items():
            status, raw = send(model, kind, chat(kind, text))
            assert status == 200, raw
            usage = orjson.loads(raw)["usage"]
            tokens = usage["prompt_tokens" if kind == "openai" else "input_tokens"]
            density[name] = len(text.encode()) / tokens
    assert 4.0 <= density["prose"] <= 5.0  # English prose, like a real BPE tokenizer
    assert density["json"] < 2.5  # ids and numbers split into many short tokens
    assert 2.5 <= density["chinese"] <= 3.1  # one token per Han character (3 UTF-8 bytes)
    assert density["json"] < density["chinese"] < density["prose"]


def test_streamed_usage_keeps_each_wire_placement() -> None:
    with ScriptedModel([{"text": "Hello world."}, {"text": "Hello world."}]) as model:
        body = chat("openai", PROSE, stream=True, stream_options={"include_usage": True})
        status, raw = send(model, "openai", body)
        assert status == 200
        *chunks, last = sse_events(raw)
        assert all("usage" not in chunk for chunk in chunks)
        prompt = prompt_tokens("openai", body)
        assert last["choices"] == []
        assert last["usage"] == {
            "prompt_tokens": prompt,
            "completion_tokens": 3,
            "total_tokens": prompt + 3,
            "prompt_tokens_details": {"cached_tokens": 0},
        }
        body = chat("anthropic", PROSE, stream=True)
        status, raw = send(model, "anthropic", body)
        assert status == 200
        events = sse_events(raw)
    start = events[0]["message"]["usage"]
    assert start == {
        "input_tokens": prompt_tokens("anthropic", body),
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    (delta,) = [e for e in events if e["type"] == "message_delta"]
    assert delta["usage"] == {"output_tokens": 3}
    assert events[1] == {"type": "ping"}  # as Anthropic streams carry them


def test_a_chat_tool_call_with_a_private_field_is_refused() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}, "_original_id": "c0"}
    messages = [
        {"role": "user", "content": "x"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "y"},
    ]
    with ScriptedModel([{"text": "never"}]) as model:
        status, raw = send(model, "openai", {"model": "m", "messages": messages})
    assert status == 400 and "private field(s) _original_id" in error_message("openai", raw)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_omitted_and_explicit_usage_are_honoured(kind: str, stream: bool) -> None:
    explicit = (
        {"prompt_tokens": 900, "completion_tokens": 10, "total_tokens": 910}
        if kind == "openai"
        else {"input_tokens": 900, "output_tokens": 10}
    )
    extra = {"stream": True, "stream_options": {"include_usage": True}} if stream and kind == "openai" else {}
    if stream and kind == "anthropic":
        extra = {"stream": True}
    with ScriptedModel([{"text": "a", "usage": "omit"}, {"text": "b", "usage": explicit}]) as model:
        omitted = send(model, kind, chat(kind, "hi", **extra))[1]
        given = send(model, kind, chat(kind, "hi", **extra))[1]
    if not stream:
        assert "usage" not in orjson.loads(omitted)
        assert orjson.loads(given)["usage"] == explicit
    elif kind == "openai":
        assert all("usage" not in event for event in sse_events(omitted))
        assert sse_events(given)[-1]["usage"] == explicit
    else:
        assert all("usage" not in str(event) for event in sse_events(omitted))
        events = sse_events(given)
        assert events[0]["message"]["usage"] == {"input_tokens": 900}
        assert [e["usage"] for e in events if e["type"] == "message_delta"] == [{"output_tokens": 10}]


def test_a_reply_longer_than_max_tokens_is_cut_and_finishes_with_length() -> None:
    long_text = "word " * 400
    with ScriptedModel([{"text": long_text}, {"text": long_text}, {"text": "short"}]) as model:
        base = chat("openai", "hi")
        cut = orjson.loads(send(model, "openai", {**base, "max_tokens": 50})[1])
        whole = orjson.loads(send(model, "openai", base)[1])
        short = orjson.loads(send(model, "openai", {**base, "max_completion_tokens": 50})[1])
    text = cut["choices"][0]["message"]["content"]
    assert cut["choices"][0]["finish_reason"] == "length"
    assert reference_tokens(text) == 50 and long_text.startswith(text)
    assert cut["usage"]["completion_tokens"] == 50
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["choices"][0]["message"]["content"] == long_text
    assert short["choices"][0]["finish_reason"] == "stop"


def test_a_raw_body_in_small_pieces_arrives_whole() -> None:
    body = b'data: {"choices":[{"index":0,"delta":{"content":"\xc3\xa9t\xc3\xa9"}}]}\n\ndata: [DONE]\n\n'
    with ScriptedModel([{"raw_body": body, "chunk_bytes": 3}]) as model:
        status, raw = post(model.root_url, PATHS["openai"], chat("openai", "hello there"))
    assert (status, raw) == (200, body)


@pytest.mark.parametrize("size", [0, -3, True, 1.5])
def test_chunk_bytes_must_be_a_positive_count(size: Any) -> None:
    with pytest.raises(ValueError, match="chunk_bytes must be a positive number of bytes"):
        ScriptedModel([{"raw_body": "x", "chunk_bytes": size}])
