"""A model server's "context too long" refusal becomes ContextTooLong, never retried, for every protocol."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from i_core.errors import EXIT_MODEL, ContextTooLong, ModelError
from i_core.providers import AnthropicAdapter, OpenAIAdapter, ProviderError, context_rejection, exchange, get_adapter
from i_core.transport import Transport, TransportError
from i_scripted import ScriptedModel

# The exact bodies the servers send.
OPENAI = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 "
        "tokens. Please reduce the length of the messages.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
OPENAI_REQUESTED = {
    "error": {
        "message": "This model's maximum context length is 8192 tokens. However, you requested 10000 tokens "
        "(6000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": "messages",
        "code": "context_length_exceeded",
    }
}
ANTHROPIC = {
    "type": "error",
    "error": {"type": "invalid_request_error", "message": "prompt is too long: 210000 tokens > 200000 maximum"},
}
LLAMA_CPP = {
    "error": {
        "code": 400,
        "message": "the request exceeds the available context size, try increasing it",
        "type": "exceed_context_size_error",
        "n_prompt_tokens": 5000,
        "n_ctx": 4096,
    }
}
VLLM = {
    "object": "error",
    "message": "This model's maximum context length is 4096 tokens. However, you requested 4596 tokens "
    "(4096 in the messages, 500 in the completion). Please reduce the length of the messages or completion.",
    "type": "BadRequestError",
    "param": None,
    "code": 400,
}
DEEPSEEK = {
    "error": {
        "message": "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens "
        "(66000 in the messages, 4000 in the completion). Please reduce the length of the messages or completion.",
        "type": "invalid_request_error",
        "param": None,
        "code": "invalid_request_error",
    }
}

RECOGNISED = [
    pytest.param(OPENAI, 9000, 8192, id="openai"),
    pytest.param(OPENAI_REQUESTED, 6000, 8192, id="openai-requested"),
    pytest.param(ANTHROPIC, 210000, 200000, id="anthropic"),
    pytest.param(LLAMA_CPP, 5000, 4096, id="llama.cpp"),
    pytest.param(VLLM, 4096, 4096, id="vllm"),
    pytest.param(DEEPSEEK, 66000, 65536, id="deepseek"),
]


def message_of(body: dict[str, Any]) -> str:
    error = body.get("error")
    return error["message"] if isinstance(error, dict) else body["message"]


# --- the parser ------------------------------------------------------------------------------


@pytest.mark.parametrize(("body", "input_tokens", "limit"), RECOGNISED)
def test_each_servers_body_is_recognised_with_its_numbers(body: dict[str, Any], input_tokens: int, limit: int) -> None:
    for given in (body, orjson.dumps(body), orjson.dumps(body).decode()):
        rejection = context_rejection(400, given)
        assert isinstance(rejection, ContextTooLong)
        assert (rejection.input_tokens, rejection.limit) == (input_tokens, limit)
        assert rejection.provider_message == message_of(body)
        assert rejection.status == 400


@pytest.mark.parametrize(
    ("message", "input_tokens", "limit"),
    [
        # vLLM's current wording, with the parameter suffix its validation error adds.
        (
            "This model's maximum context length is 2048 tokens. However, your request has 3000 input tokens. "
            "Please reduce the length of the input messages. (parameter=input_tokens, value=3000)",
            3000,
            2048,
        ),
        (
            "'max_tokens' or 'max_completion_tokens' is too large: 4000. This model's maximum context length is "
            "4096 tokens and your request has 200 input tokens (4000 > 4096 - 200).",
            200,
            4096,
        ),
        (
            "The decoder prompt (length 5000) is longer than the maximum model length of 4096. Make sure that "
            "`max_model_len` is no smaller than the number of text tokens.",
            5000,
            4096,
        ),
        # Anthropic when prompt + max_tokens overflow.
        (
            "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length or "
            "`max_tokens` and try again",
            198000,
            200000,
        ),
        # llama.cpp with the counts in its text only.
        ("request (5000 tokens) exceeds the available context size (4096 tokens), try increasing it", 5000, 4096),
        # A limit without the input count.
        ("This endpoint's maximum context length is 163,840 tokens. Please reduce the length.", None, 163840),
    ],
)
def test_fallback_on_the_text_alone(message: str, input_tokens: int | None, limit: int | None) -> None:
    rejection = context_rejection(400, {"error": {"message": message, "code": 400}})
    assert rejection is not None
    assert (rejection.input_tokens, rejection.limit) == (input_tokens, limit)


def test_numbers_are_parsed_defensively() -> None:
    odd = {
        "error": {"type": "exceed_context_size_error", "message": "too big", "n_prompt_tokens": "5000", "n_ctx": True}
    }
    rejection = context_rejection(400, odd)
    assert rejection is not None and rejection.input_tokens is None and rejection.limit is None
    bare = context_rejection(400, {"error": {"code": "context_length_exceeded", "message": "too long"}})
    assert bare is not None and (bare.input_tokens, bare.limit) == (None, None)
    assert bare.provider_message == "too long"
    no_message = context_rejection(400, {"error": {"code": "context_length_exceeded"}})
    assert no_message is not None and no_message.provider_message is None
    assert context_rejection(413, b"maximum context length is 1000 tokens") is not None  # plain text body


def test_the_message_is_clear() -> None:
    assert str(context_rejection(400, ANTHROPIC)) == (
        "the model server refused the request as too long for its context (210000 tokens > 200000)"
    )
    assert str(context_rejection(400, OPENAI_REQUESTED)) == (
        "the model server refused the request as too long for its context "
        "(6000 input tokens plus the requested output > 8192)"
    )
    bare = context_rejection(400, {"error": {"code": "context_length_exceeded", "message": "too long"}})
    assert str(bare) == "the model server refused the request as too long for its context: too long"
    error = ContextTooLong(limit=4096)
    assert isinstance(error, ModelError) and error.exit_code == EXIT_MODEL
    assert str(error) == "the model server refused the request as too long for its context (limit 4096 tokens)"


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(
            400,
            {
                "error": {
                    "message": "max_tokens is too large: 999999. This model supports at most 4096 completion tokens",
                    "type": "invalid_request_error",
                    "code": "invalid_value",
                }
            },
            id="400-other",
        ),
        pytest.param(
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: roles must alternate"}},
            id="400-anthropic",
        ),
        pytest.param(
            429,
            {
                "error": {
                    "message": "Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 50000.",
                    "type": "tokens",
                    "code": "rate_limit_exceeded",
                }
            },
            id="429-tpm",
        ),
        pytest.param(429, OPENAI, id="429-even-with-context-text"),
        pytest.param(500, LLAMA_CPP, id="500"),
        pytest.param(503, {"error": {"message": "maximum context length is 10 tokens"}}, id="503"),
        pytest.param(
            413,
            {
                "type": "error",
                "error": {
                    "type": "request_too_large",
                    "message": "Request exceeds the maximum allowed number of bytes.",
                },
            },
            id="413-bytes",
        ),
        pytest.param(400, b"<html>Bad Request</html>", id="html"),
        pytest.param(400, b"", id="empty"),
        pytest.param(400, [1, 2], id="list"),
        pytest.param(400, None, id="none"),
        pytest.param(400, {"detail": "maximum context length is 10 tokens"}, id="other-shape"),
        pytest.param(200, OPENAI, id="200-with-status"),
        pytest.param(
            None, {"error": {"code": 429, "message": "maximum context length is 10 tokens"}}, id="in-band-429"
        ),
        pytest.param(
            None,
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
            id="in-band-overloaded",
        ),
    ],
)
def test_bodies_that_are_not_context_rejections(status: int | None, body: Any) -> None:
    assert context_rejection(status, body) is None


def test_in_band_errors_are_recognised_without_a_status() -> None:
    rejection = context_rejection(None, OPENAI)
    assert rejection is not None and rejection.status is None and rejection.limit == 8192


# --- over real HTTP ----------------------------------------------------------------------------

BODY = {"model": "m", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
OK = {"text": "fine"}


class Recorder:
    def __init__(self) -> None:
        self.retries: list[tuple[int, str]] = []

    def on_retry(self, attempt: int, reason: str) -> None:
        self.retries.append((attempt, reason))


@pytest.mark.parametrize(("body", "input_tokens", "limit"), RECOGNISED)
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
@pytest.mark.parametrize("stream", [False, True])
def test_a_400_context_rejection_is_raised_and_never_retried(
    body: dict[str, Any], input_tokens: int, limit: int, protocol: str, stream: bool
) -> None:
    adapter = get_adapter(protocol)
    rec = Recorder()
    with ScriptedModel([{"status": 400, "raw_body": orjson.dumps(body)}, OK, OK]) as model:
        with Transport(retries=3, sleep=lambda _s: None) as transport, pytest.raises(ContextTooLong) as caught:
            exchange(
                adapter,
                transport,
                adapter.url(model.base_url_for(protocol)),
                {**BODY, "stream": stream},
                adapter.headers(None),
                on_retry=rec.on_retry,
            )
        assert len(model.requests) == 1
    assert rec.retries == []
    error = caught.value
    assert (error.input_tokens, error.limit, error.status) == (input_tokens, limit, 400)
    assert not isinstance(error, TransportError)


def test_a_400_about_something_else_stays_a_transport_error() -> None:
    with (
        ScriptedModel([{"status": 400, "error_message": "max_tokens is too large"}]) as model,
        Transport() as transport,
        pytest.raises(TransportError) as caught,
    ):
        transport.post(model.base_url + "/chat/completions", BODY, {}, stream=False, on_retry=Recorder().on_retry)
    assert not isinstance(caught.value, ContextTooLong)
    assert caught.value.status == 400


def test_a_429_is_still_retried() -> None:
    rec = Recorder()
    with ScriptedModel([{"status": 429, "raw_body": orjson.dumps(OPENAI)}, OK]) as model:
        with Transport(sleep=lambda _s: None) as transport:
            answer = transport.post(model.base_url + "/chat/completions", BODY, {}, stream=False, on_retry=rec.on_retry)
        assert len(model.requests) == 2
    assert isinstance(answer, dict) and [n for n, _ in rec.retries] == [1]


def sse(*events: tuple[str | None, dict[str, Any]]) -> str:
    frames = []
    for name, data in events:
        frames.append((f"event: {name}\n" if name else "") + f"data: {orjson.dumps(data).decode()}\n\n")
    return "".join(frames)


OPENAI_CHUNK = {
    "id": "c1",
    "object": "chat.completion.chunk",
    "choices": [{"index": 0, "delta": {"role": "assistant"}}],
}


@pytest.mark.parametrize("body", [OPENAI, LLAMA_CPP, {"error": VLLM}])
def test_an_openai_stream_error_event_is_recognised(body: dict[str, Any]) -> None:
    rec = Recorder()
    with ScriptedModel([{"raw_body": sse((None, OPENAI_CHUNK), (None, body))}, OK]) as model:
        with Transport() as transport, pytest.raises(ContextTooLong) as caught:
            exchange(
                OpenAIAdapter(),
                transport,
                model.base_url + "/chat/completions",
                {**BODY, "stream": True},
                {},
                on_retry=rec.on_retry,
            )
        assert len(model.requests) == 1
    assert caught.value.status is None and caught.value.limit is not None and rec.retries == []


def test_an_anthropic_stream_error_event_is_recognised() -> None:
    start = {
        "type": "message_start",
        "message": {
            "id": "m1",
            "type": "message",
            "role": "assistant",
            "content": [],
            "usage": {"input_tokens": 1, "output_tokens": 0},
        },
    }
    with ScriptedModel([{"raw_body": sse(("message_start", start), ("error", ANTHROPIC))}]) as model:
        adapter = AnthropicAdapter()
        with Transport() as transport, pytest.raises(ContextTooLong) as caught:
            exchange(
                adapter,
                transport,
                adapter.url(model.root_url),
                {**BODY, "stream": True},
                adapter.headers(None),
                on_retry=Recorder().on_retry,
            )
    assert (caught.value.input_tokens, caught.value.limit) == (210000, 200000)


def test_other_stream_errors_stay_provider_errors() -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    with pytest.raises(ProviderError, match="Overloaded") as caught:
        AnthropicAdapter().parse_stream([overloaded], lambda _t: None)
    assert not isinstance(caught.value, ContextTooLong)
    with pytest.raises(ProviderError, match="overloaded") as caught:
        OpenAIAdapter().parse_stream([{"error": {"message": "overloaded"}}], lambda _t: None)
    assert not isinstance(caught.value, ContextTooLong)


@pytest.mark.parametrize(("adapter", "body"), [(OpenAIAdapter(), OPENAI), (AnthropicAdapter(), ANTHROPIC)])
def test_an_error_inside_a_200_body_is_recognised(adapter: Any, body: dict[str, Any]) -> None:
    with pytest.raises(ContextTooLong):
        adapter.parse_response(body)


class _JsonServer:
    """Answers every POST with 200 and a fixed JSON body (a server ignoring stream: true)."""

    def __init__(self, body: bytes) -> None:
        outer = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.requests += 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/chat/completions"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def __enter__(self) -> _JsonServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_a_json_error_answering_a_stream_request_is_recognised() -> None:
    with _JsonServer(orjson.dumps(OPENAI)) as server, Transport() as transport:
        with pytest.raises(ContextTooLong) as caught:
            transport.post(
                server.url,
                {**BODY, "stream": True},
                {},
                stream=True,
                on_retry=Recorder().on_retry,
                on_event=lambda _e: None,
            )
        assert server.requests == 1
    assert caught.value.limit == 8192
