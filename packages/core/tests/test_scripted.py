"""The scripted model server: recording, script steps, wire checks and its command line."""

from __future__ import annotations

import hashlib
import http.client
import random
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.providers import exchange, get_adapter
from i_core.scripted import ScriptedModel, ScriptError, load_script, prompt_tokens, reference_tokens
from i_core.transport import Transport, TransportError

TRANSPORT = Transport(retries=0)


def ask(model: ScriptedModel, protocol: str, history: list[dict[str, Any]], *, stream: bool = False, **kw: Any):
    adapter = get_adapter(protocol)
    body = adapter.build_body(
        model="m", history=history, tools=None, max_tokens=64, use_max_tokens=True, stream=stream, extra_body=None
    )
    body.update(kw)
    return exchange(
        adapter,
        TRANSPORT,
        adapter.url(model.base_url_for(protocol)),
        body,
        adapter.headers("sk-live-123"),
        on_retry=lambda *_: None,
    )


def raw_post(model: ScriptedModel, path: str, body: Any, headers: dict[str, str] | None = None) -> Any:
    return TRANSPORT.post(model.root_url + path, body, headers or {}, stream=False, on_retry=lambda *_: None)


USER = [{"role": "system", "content": "s"}, {"role": "user", "content": "hello there"}]


def test_urls_follow_each_protocol_convention() -> None:
    with ScriptedModel([]) as model:
        assert model.base_url == model.root_url + "/v1"
        assert model.base_url_for("openai") == model.base_url_for("deepseek") == model.base_url
        assert model.base_url_for("anthropic") == model.root_url
        assert model.root_url.startswith("http://127.0.0.1:")


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_requests_are_recorded_with_secrets_redacted(protocol: str) -> None:
    with ScriptedModel([{"text": "hi"}]) as model:
        ask(model, protocol, USER)
    (request,) = model.requests
    assert request.method == "POST"
    assert request.path == ("/v1/messages" if protocol == "anthropic" else "/v1/chat/completions")
    key = "x-api-key" if protocol == "anthropic" else "authorization"
    assert request.headers[key] == "<redacted>"
    assert "sk-live-123" not in orjson.dumps(request.headers).decode()
    assert request.body["model"] == "m"


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_an_exhausted_script_answers_500_with_a_clear_message(protocol: str) -> None:
    with ScriptedModel([{"text": "one"}]) as model:
        ask(model, protocol, USER)
        with pytest.raises(TransportError, match="scripted model: script exhausted after 1 requests") as caught:
            ask(model, protocol, USER)
    assert caught.value.status == 500


def test_a_callable_step_answers_from_the_request() -> None:
    seen: list[Any] = []

    def step(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return {"text": f"you said {request['messages'][-1]['content']}"}

    with ScriptedModel([step]) as model:
        reply = ask(model, "openai", USER)
    assert reply.message["content"] == "you said hello there"
    assert seen[0]["model"] == "m"


def test_a_broken_callable_is_reported_not_hung() -> None:
    with (
        ScriptedModel([lambda _r: {"bogus": 1}]) as model,
        pytest.raises(TransportError, match=r"step failed: .*unknown field"),
    ):
        ask(model, "openai", USER)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_templates_fill_in_the_last_user_message_and_tool_result(protocol: str, stream: bool) -> None:
    script = [
        {"tool_calls": [{"name": "read", "arguments": '{"path": "x"}', "id": "call_fixed"}]},
        {"text": "Q={{last_user_message}} R={{last_tool_result}}"},
    ]
    with ScriptedModel(script) as model:
        first = ask(model, protocol, USER, stream=stream)
        assert first.message["tool_calls"][0]["id"] == "call_fixed"
        history = [*USER, first.message, {"role": "tool", "tool_call_id": "call_fixed", "content": "# Title"}]
        second = ask(model, protocol, history, stream=stream)
    assert second.message["content"] == "Q=hello there R=# Title"


def test_finish_reason_is_given_in_openai_terms_for_both_wires() -> None:
    with ScriptedModel(
        [{"text": "cut", "finish_reason": "length"}, {"text": "cut", "finish_reason": "length"}]
    ) as model:
        assert ask(model, "openai", USER).finish_reason == "length"
        assert ask(model, "anthropic", USER).finish_reason == "length"  # sent as max_tokens on the wire
        assert model.requests[-1].path == "/v1/messages"


def test_a_step_can_force_the_reply_mode() -> None:
    with ScriptedModel([{"text": "plain", "stream": False}, {"text": "sse", "stream": True}]) as model:
        with pytest.raises(TransportError, match="answered JSON instead of an event stream"):
            ask(model, "openai", USER, stream=True)
        with pytest.raises(TransportError, match="not JSON"):
            ask(model, "openai", USER)  # an event stream where JSON was asked for


def test_streamed_openai_usage_only_with_include_usage() -> None:
    with ScriptedModel([{"text": "a"}, {"text": "b"}]) as model:
        assert ask(model, "openai", USER, stream=True).usage is not None
        assert ask(model, "openai", USER, stream=True, stream_options={"include_usage": False}).usage is None


def test_unknown_step_fields_are_refused_up_front() -> None:
    with pytest.raises(ScriptError, match=r"step 0: unknown field.*txt"):
        ScriptedModel([{"txt": "typo"}])
    with pytest.raises(ScriptError, match="needs a name"):
        ScriptedModel([{"tool_calls": [{"arguments": {}}]}])


def test_unknown_paths_name_the_served_endpoints() -> None:
    with ScriptedModel([{"text": "x"}]) as model:
        with pytest.raises(
            TransportError, match=r"nothing is served at /v1/v1/messages.*/v1/messages \(base_url is the root\)"
        ):
            raw_post(model, "/v1/v1/messages", {"model": "m"})
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
    with ScriptedModel([{"text": "x"}]) as model:
        with pytest.raises(TransportError, match=problem) as caught:
            raw_post(model, path, body, headers)
        assert caught.value.status == 400
        assert model.served == 0  # a rejected request does not consume a step


def test_load_script_accepts_a_list_or_a_steps_object(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text('[{"text": "a"}]')
    (tmp_path / "b.json").write_text('{"steps": [{"text": "b"}]}')
    (tmp_path / "c.json").write_text('{"text": "c"}')
    assert load_script(tmp_path / "a.json") == [{"text": "a"}]
    assert load_script(tmp_path / "b.json") == [{"text": "b"}]
    with pytest.raises(ScriptError, match="a script is a JSON list of steps"):
        load_script(tmp_path / "c.json")


def test_the_command_line_prints_the_base_url_serves_and_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(orjson.dumps([{"text": "from the CLI"}]).decode())
    record = tmp_path / "requests.ndjson"
    process = subprocess.Popen(
        [sys.executable, "-m", "i_core.scripted", "--script", str(script), "--port", "0", "--record", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        adapter = get_adapter("openai")
        body = adapter.build_body(
            model="m", history=USER, tools=None, max_tokens=None, use_max_tokens=True, stream=False, extra_body=None
        )
        answer = TRANSPORT.post(
            adapter.url(base_url), body, adapter.headers("sk-cli"), stream=False, on_retry=lambda *_: None
        )
        assert answer["choices"][0]["message"]["content"] == "from the CLI"
    finally:
        process.terminate()
        process.wait(timeout=10)
    (line,) = record.read_bytes().splitlines()
    recorded = orjson.loads(line)
    assert recorded["path"] == "/v1/chat/completions" and recorded["headers"]["authorization"] == "<redacted>"


def test_the_command_line_refuses_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('[{"txet": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "i_core.scripted", "--script", str(script)], capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 2
    assert "cannot load" in result.stderr and "unknown field(s) txet" in result.stderr
    assert result.stdout == ""


# --- usage counted from the content, context enforcement, capacity endpoints ----------------------

PROSE = (
    "The library was quiet in the late afternoon, and the light came in low through the tall windows. "
    "Most of the readers had already gone home, but a few students were still bent over their notes, "
    "trying to finish the chapter before the doors closed. Nobody spoke; the only sound was the slow "
    "turning of pages and, now and then, the soft scrape of a chair. When the bell finally rang, they "
    "gathered their books, thanked the librarian on the way out, and walked together into the evening, "
    "talking about the examination that was waiting for them at the end of the week. "
)
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


def post(model: ScriptedModel, path: str, body: Any, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """One raw POST: the exact status and body bytes, nothing interpreted."""
    connection = http.client.HTTPConnection(*model._server.server_address[:2], timeout=10)
    try:
        connection.request("POST", path, orjson.dumps(body), {"content-type": "application/json", **(headers or {})})
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def get(model: ScriptedModel, path: str) -> tuple[int, Any]:
    connection = http.client.HTTPConnection(*model._server.server_address[:2], timeout=10)
    try:
        connection.request("GET", path, headers={"authorization": "Bearer sk-probe"})
        response = connection.getresponse()
        return response.status, orjson.loads(response.read())
    finally:
        connection.close()


ANTHROPIC_HEADERS = {"anthropic-version": "2023-06-01", "x-api-key": "sk-a"}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}


def chat(kind: str, text: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": text}], **extra}
    if kind == "anthropic":
        body.setdefault("max_tokens", 16)
    return body


def send(model: ScriptedModel, kind: str, body: dict[str, Any]) -> tuple[int, bytes]:
    return post(model, PATHS[kind], body, ANTHROPIC_HEADERS if kind == "anthropic" else None)


def sse_events(raw: bytes) -> list[Any]:
    return [
        orjson.loads(line[6:]) for line in raw.splitlines() if line.startswith(b"data: ") and line != b"data: [DONE]"
    ]


def test_reference_tokens_follows_the_documented_rule() -> None:
    assert reference_tokens("Hello world.") == 3  # "Hello", " world", "."
    assert reference_tokens("internationalization") == 3  # 20 letters: one token per started 7
    assert reference_tokens("12345") == 2  # "123", "45"
    assert reference_tokens("中文!") == 3  # each non-ASCII character is a token
    assert reference_tokens('{"id": 7}') == 7  # { " id " : " 7" }
    assert reference_tokens("a  \n\tb") == 3  # "a", a whitespace run, "b"
    assert reference_tokens("") == 0


def test_the_reference_split_is_linear_time() -> None:
    for hostile in ("a" * 200_000, " " * 200_000, "1" * 200_000, "!" * 200_000, "é" * 200_000, " a" * 100_000):
        started = time.perf_counter()
        reference_tokens(hostile)
        assert time.perf_counter() - started < 2.0


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


def test_prompt_tokens_frames_an_openai_request_like_a_chat_template() -> None:
    tool = {"type": "function", "function": {"name": "read", "parameters": {"type": "object"}}}
    body = {
        "model": "m",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image_url", "image_url": {}}]},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": '{"p":1}'}}],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "done"},
        ],
        "tools": [tool],
    }
    expected = (
        3
        + (4 + reference_tokens("Be brief."))
        + (4 + reference_tokens("Look:") + 85)
        + (4 + 3 + reference_tokens("read") + reference_tokens('{"p":1}'))
        + (4 + reference_tokens("done"))
        + (8 + reference_tokens('{"name":"read","parameters":{"type":"object"}}'))
    )
    assert prompt_tokens("openai", body) == expected == 3 + 7 + 91 + 15 + 5 + 32 == 153


def test_prompt_tokens_counts_every_anthropic_block() -> None:
    body = {
        "model": "m",
        "max_tokens": 5,
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Look:"}, {"type": "image", "source": {}}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {"p": 1}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "done"}]},
        ],
        "tools": [{"name": "read", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
    }
    expected = (
        3
        + (4 + reference_tokens("Be brief."))
        + (4 + reference_tokens("Look:") + 85)
        + (4 + 3 + reference_tokens("read") + reference_tokens('{"p":1}'))
        + (4 + reference_tokens("done"))
        + (8 + reference_tokens('{"name":"read","input_schema":{"type":"object"}}'))
    )
    assert prompt_tokens("anthropic", body) == expected
    with pytest.raises(ValueError, match="kind must be openai or anthropic"):
        prompt_tokens("gemini", body)


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_usage_is_counted_from_the_request_and_the_reply(protocol: str, stream: bool) -> None:
    script = [{"text": "Hello world.", "tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}]
    with ScriptedModel(script) as model:
        reply = ask(model, protocol, USER, stream=stream)
    (request,) = model.requests
    kind = "anthropic" if protocol == "anthropic" else "openai"
    output = reference_tokens("Hello world.") + reference_tokens("read") + reference_tokens('{"path":"README.md"}')
    assert reply.usage is not None
    assert reply.usage["input_tokens"] == prompt_tokens(kind, request.body)
    assert reply.usage["output_tokens"] == output == 3 + 1 + 11


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


def overflowing(kind: str, window: int, *, margin: int = 1, **extra: Any) -> dict[str, Any]:
    """A request whose prompt is exactly ``window + margin - 1`` tokens (each "word " adds one)."""
    text = ""
    body = chat(kind, text, **extra)
    while prompt_tokens(kind, body) < window + margin - 1:
        text += "word "
        body = chat(kind, text, **extra)
    return body


EXACT_BODIES = {
    ("openai", "prompt"): lambda n, m, k: {
        "error": {
            "message": f"This model's maximum context length is {n} tokens. However, your messages resulted in "
            f"{m} tokens. Please reduce the length of the messages.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    ("openai", "output"): lambda n, m, k: {
        "error": {
            "message": f"This model's maximum context length is {n} tokens. However, you requested {m + k} tokens "
            f"({m} in the messages, {k} in the completion). Please reduce the length of the messages or completion.",
            "type": "invalid_request_error",
            "param": "messages",
            "code": "context_length_exceeded",
        }
    },
    ("anthropic", "prompt"): lambda n, m, k: {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": f"prompt is too long: {m} tokens > {n} maximum"},
    },
    ("anthropic", "output"): lambda n, m, k: {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"input length and `max_tokens` exceed context limit: {m} + {k} > {n}, "
            "decrease input length or `max_tokens` and try again",
        },
    },
    ("llamacpp", "prompt"): lambda n, m, k: {
        "error": {
            "code": 400,
            "message": f"request ({m} tokens) exceeds the available context size ({n} tokens), try increasing it",
            "type": "exceed_context_size_error",
            "n_prompt_tokens": m,
            "n_ctx": n,
        }
    },
    ("vllm", "prompt"): lambda n, m, k: {
        "error": {
            "message": f"This model's maximum context length is {n} tokens. However, your request has {m} input "
            f"tokens. Please reduce the length of the input messages. (parameter=input_tokens, value={m})",
            "type": "BadRequestError",
            "param": "input_tokens",
            "code": 400,
        }
    },
    ("vllm", "output"): lambda n, m, k: {
        "error": {
            "message": f"'max_tokens' or 'max_completion_tokens' is too large: {k}. This model's maximum context "
            f"length is {n} tokens and your request has {m} input tokens ({k} > {n} - {m}). "
            f"(parameter=max_tokens, value={k})",
            "type": "BadRequestError",
            "param": "max_tokens",
            "code": 400,
        }
    },
}


@pytest.mark.parametrize(("style", "overflow"), sorted(EXACT_BODIES))
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_each_style_refuses_with_the_exact_body_and_consumes_no_step(kind: str, style: str, overflow: str) -> None:
    window = 200
    if overflow == "prompt":
        body = overflowing(kind, window, margin=2, max_tokens=1)  # over the window on its own
    else:
        body = overflowing(kind, window, margin=-30, max_tokens=60)  # fits, but not with the output
    prompt = prompt_tokens(kind, body)
    assert (prompt > window) == (overflow == "prompt")
    calls: list[Any] = []

    def step(request: Any) -> dict[str, Any]:
        calls.append(request)
        return {"text": "answered"}

    with ScriptedModel([step], context_window=window, context_style=style) as model:
        status, raw = send(model, kind, body)
        assert status == 400
        assert orjson.loads(raw) == EXACT_BODIES[style, overflow](window, prompt, 60)
        assert (model.served, model.rejections, calls) == (0, 1, [])  # refused before any step ran
        assert len(model.requests) == 1  # still recorded
        status, raw = send(model, kind, chat(kind, "short", max_tokens=8))
    assert status == 200 and b"answered" in raw
    assert (model.served, model.rejections) == (1, 1)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_the_default_style_follows_the_path(kind: str) -> None:
    window = 100
    body = overflowing(kind, window, margin=5)
    with ScriptedModel([{"text": "x"}], context_window=window) as model:
        status, raw = send(model, kind, body)
    assert status == 400
    assert orjson.loads(raw) == EXACT_BODIES[kind, "prompt"](window, prompt_tokens(kind, body), 0)


def test_openai_counts_max_completion_tokens_first_and_nothing_when_absent() -> None:
    window = 100
    fits = overflowing("openai", window, margin=-20)  # about 80 prompt tokens
    prompt = prompt_tokens("openai", fits)
    with ScriptedModel([{"text": "x"}, {"text": "y"}], context_window=window) as model:
        assert send(model, "openai", fits)[0] == 200  # no max_tokens: only the prompt must fit
        status, raw = send(model, "openai", {**fits, "max_tokens": 5, "max_completion_tokens": 50})
        assert status == 400
        assert orjson.loads(raw) == EXACT_BODIES["openai", "output"](window, prompt, 50)
        assert send(model, "openai", {**fits, "max_tokens": window - prompt})[0] == 200  # exactly full fits
    assert (model.served, model.rejections) == (2, 1)


@pytest.mark.parametrize(("style", "status"), [("llamacpp", 400), ("vllm", 400), ("openai", 200), ("anthropic", 200)])
def test_a_prompt_that_fills_the_window_exactly(style: str, status: int) -> None:
    body = overflowing("openai", 60)
    assert prompt_tokens("openai", body) == 60  # each "word " adds one token
    with ScriptedModel([{"text": "x"}], context_window=60, context_style=style) as model:
        # llama-server and vLLM need one free position to generate (>=); OpenAI/Anthropic refuse only above N.
        assert send(model, "openai", body)[0] == status


def test_llamacpp_does_not_refuse_a_large_max_tokens() -> None:
    # llama-server compares the prompt alone with n_ctx; the generation would stop at the context end.
    body = chat("openai", "short", max_tokens=10_000)
    with ScriptedModel([{"text": "x"}], context_window=100, context_style="llamacpp") as model:
        assert send(model, "openai", body)[0] == 200
    assert model.rejections == 0


def test_vllm_checks_max_tokens_only_when_given() -> None:
    body = overflowing("openai", 100, margin=-10)
    with ScriptedModel([{"text": "x"}], context_window=100, context_style="vllm") as model:
        assert send(model, "openai", body)[0] == 200
        assert send(model, "openai", {**body, "max_completion_tokens": 50})[0] == 400
    assert model.rejections == 1


def test_without_a_window_nothing_is_refused_and_no_capacity_is_advertised() -> None:
    with ScriptedModel([{"text": "x"}]) as model:
        assert send(model, "openai", chat("openai", PROSE * 50, max_tokens=10**6))[0] == 200
        assert get(model, "/v1/models")[0] == 404
        assert get(model, "/props")[0] == 404
    assert model.rejections == 0


def test_capacity_endpoints_answer_like_each_server() -> None:
    with ScriptedModel([], context_window=4096, context_style="llamacpp", model_name="qwen") as model:
        status, props = get(model, "/props")
        assert status == 200
        assert props["default_generation_settings"]["n_ctx"] == 4096
        assert props["total_slots"] == 1 and props["model_path"].endswith(".gguf")
        assert "n_ctx" not in props  # llama-server has it under default_generation_settings only
        status, models = get(model, "/v1/models?x=1")
        assert status == 200 and models["object"] == "list"
        assert models["data"] == [{"id": "qwen", "object": "model", "created": 0, "owned_by": "llamacpp"}]
        assert get(model, "/health")[0] == 404
        assert [probe.path for probe in model.probes] == ["/props", "/v1/models", "/health"]
        assert model.probes[0].headers["authorization"] == "<redacted>"
        assert model.requests == []  # probes are not model requests
    with ScriptedModel([], context_window=32768, context_style="vllm") as model:
        assert get(model, "/props")[0] == 404  # vLLM has no /props
        status, models = get(model, "/v1/models")
        (card,) = models["data"]
    assert status == 200
    assert card == {
        "id": "scripted-1",
        "object": "model",
        "created": 0,
        "owned_by": "vllm",
        "root": "scripted-1",
        "parent": None,
        "max_model_len": 32768,
    }
    for style in (None, "openai", "anthropic"):
        with ScriptedModel([], context_window=8000, context_style=style) as model:
            assert get(model, "/props")[0] == 404
            status, models = get(model, "/v1/models")
        assert status == 200
        assert models == {
            "object": "list",
            "data": [{"id": "scripted-1", "object": "model", "created": 0, "owned_by": "scripted"}],
        }


def test_bad_context_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="context_window must be a positive"):
        ScriptedModel([], context_window=0)
    with pytest.raises(ValueError, match="context_window must be a positive"):
        ScriptedModel([], context_window=True)
    with pytest.raises(ValueError, match="context_style must be one of openai, anthropic, llamacpp, vllm"):
        ScriptedModel([], context_window=10, context_style="tgi")


def test_the_command_line_enforces_a_context_window(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"text": "fits"}]')
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "i_core.scripted",
            "--script",
            str(script),
            "--context-window",
            "50",
            "--context-style",
            "llamacpp",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        root = process.stdout.readline().strip().removesuffix("/v1")
        with urllib.request.urlopen(root + "/props", timeout=10) as answer:
            assert orjson.loads(answer.read())["default_generation_settings"]["n_ctx"] == 50
        request = urllib.request.Request(
            root + "/v1/chat/completions", orjson.dumps(chat("openai", PROSE)), {"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=10)
        assert refused.value.code == 400
        assert orjson.loads(refused.value.read())["error"]["type"] == "exceed_context_size_error"
    finally:
        process.terminate()
        process.wait(timeout=10)
    result = subprocess.run(
        [sys.executable, "-m", "i_core.scripted", "--script", str(script), "--context-window", "0"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 2 and "--context-window must be a positive" in result.stderr


def test_a_reply_longer_than_max_tokens_is_cut_and_finishes_with_length():
    import httpx

    from i_core.scripted import ScriptedModel, reference_tokens

    long_text = "word " * 400
    with ScriptedModel([{"text": long_text}, {"text": long_text}, {"text": "short"}]) as model:
        url = model.base_url + "/chat/completions"
        base = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        cut = httpx.post(url, json={**base, "max_tokens": 50}).json()
        whole = httpx.post(url, json=base).json()
        short = httpx.post(url, json={**base, "max_completion_tokens": 50}).json()
    text = cut["choices"][0]["message"]["content"]
    assert cut["choices"][0]["finish_reason"] == "length"
    assert reference_tokens(text) == 50 and long_text.startswith(text)
    assert cut["usage"]["completion_tokens"] == 50
    assert whole["choices"][0]["finish_reason"] == "stop"
    assert whole["choices"][0]["message"]["content"] == long_text
    assert short["choices"][0]["finish_reason"] == "stop"
