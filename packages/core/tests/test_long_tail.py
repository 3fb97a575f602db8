"""OpenAI-compatible servers as they really are: recorded answers replayed on loopback.

Each fixture in ``recordings/`` (sources and licences in its README) is served by the scripted
model as the raw body it is, and read through the real transport and adapter, whole and (streams)
delivered in 3-byte pieces, the way a fragmenting proxy hands it over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.errors import ProviderError, TransportError
from i_core.providers import ModelReply, exchange, get_adapter
from i_core.transport import Transport
from i_scripted import ScriptedModel

RECORDINGS = Path(__file__).parent / "recordings"
PIECES = [pytest.param(None, id="whole"), pytest.param(3, id="3-byte-pieces")]
HISTORY = [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}]


def recording(name: str) -> bytes:
    return (RECORDINGS / name).read_bytes()


def replay(
    protocol: str,
    raw_body: bytes,
    *,
    stream: bool,
    chunk: int | None = None,
    status: int = 200,
    shown: list[str] | None = None,
    observed: list[dict[str, Any]] | None = None,
) -> ModelReply:
    """``raw_body`` served as the answer to one request, read by the real transport and adapter."""
    adapter = get_adapter(protocol)
    step: dict[str, Any] = {"raw_body": raw_body, "status": status, "stream": stream}
    if chunk is not None:
        step["chunk_bytes"] = chunk
    with ScriptedModel([step]) as model, Transport(retries=0) as transport:
        body = adapter.build_body(
            model="m",
            history=HISTORY,
            tools=None,
            max_tokens=256,
            use_max_tokens=False,
            stream=stream,
            extra_body=None,
        )
        return exchange(
            adapter,
            transport,
            adapter.url(model.base_url_for(protocol)),
            body,
            adapter.headers(None),
            on_retry=lambda *_: None,
            on_text=(shown if shown is not None else []).append,
            on_raw=(observed if observed is not None else []).append,
        )


# --- 1, 2: a stream that reached [DONE] is complete; a tool name is set once ---------------------


@pytest.mark.parametrize("chunk", PIECES)
def test_a_tool_call_stream_that_reached_done_without_a_finish_reason_is_complete(chunk: int | None) -> None:
    reply = replay("openai", recording("openrouter-novita-kimi-k2-tool-call-no-finish.sse"), stream=True, chunk=chunk)
    assert reply.finish_reason == "tool_calls" and reply.meta == {"finish_inferred": True}
    assert reply.message["tool_calls"] == [
        {"id": "0", "type": "function", "function": {"name": "llm_version", "arguments": "{}"}}
    ]
    assert reply.usage is not None and reply.usage["input_tokens"] == 57


@pytest.mark.parametrize("chunk", PIECES)
def test_a_tool_name_sent_in_full_twice_is_set_once(chunk: int | None) -> None:
    raw = recording("openrouter-novita-kimi-k2-tool-name-twice-no-finish.sse")
    reply = replay("openai", raw, stream=True, chunk=chunk)
    call = reply.message["tool_calls"][0]["function"]
    assert call == {"name": "llm_version", "arguments": "{}"}  # arguments "" then "{}" are appended
    assert reply.finish_reason == "tool_calls"


def test_a_tool_name_repeated_in_a_later_delta_is_not_joined_even_before_the_end() -> None:
    parser = get_adapter("openai").stream_parser(lambda _text: None)
    for line in recording("openrouter-novita-kimi-k2-tool-name-twice-no-finish.sse").splitlines():
        if line.startswith(b"data: {"):
            parser.feed(orjson.loads(line[6:]))
    assert parser.raw()["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "llm_version"


@pytest.mark.parametrize("chunk", PIECES)
def test_a_text_stream_that_reached_done_without_a_finish_reason_stops(chunk: int | None) -> None:
    shown: list[str] = []
    reply = replay("openai", recording("snowflake-cortex-stream-no-finish.sse"), stream=True, chunk=chunk, shown=shown)
    assert reply.finish_reason == "stop" and reply.meta["finish_inferred"] is True
    assert reply.message["content"] == "".join(shown) == "Snowflakes form when water vapour freezes."


@pytest.mark.parametrize("chunk", PIECES)
def test_a_stream_cut_before_done_is_still_incomplete(chunk: int | None) -> None:
    raw = recording("openrouter-novita-kimi-k2-tool-call-no-finish.sse").replace(b"data: [DONE]\n\n", b"")
    with pytest.raises(ProviderError, match=r"without a finish_reason or \[DONE\] \(incomplete answer\)"):
        replay("openai", raw, stream=True, chunk=chunk)


# --- 3: finish_reason "" in a complete body -----------------------------------------------------


@pytest.mark.parametrize(
    ("name", "finish"),
    [
        ("snowflake-cortex-finish-reason-empty.json", "stop"),
        ("snowflake-cortex-tool-call-finish-reason-empty.json", "tool_calls"),
    ],
)
def test_an_empty_finish_reason_in_a_complete_body_is_inferred(name: str, finish: str) -> None:
    reply = replay("openai", recording(name), stream=False)
    assert reply.finish_reason == finish and reply.meta == {"finish_inferred": True}
    assert reply.usage is not None


def test_a_finish_reason_of_the_wrong_type_is_still_malformed() -> None:
    body = orjson.loads(recording("snowflake-cortex-finish-reason-empty.json"))
    body["choices"][0]["finish_reason"] = 0
    with pytest.raises(ProviderError, match=r"choices\[0\].finish_reason is a int"):
        replay("openai", orjson.dumps(body), stream=False)


# --- 4: content as a list of parts (Mistral thinking models) -----------------------------------


def test_content_parts_give_the_text_as_answer_and_thinking_as_reasoning() -> None:
    reply = replay("openai", recording("mistral-magistral-thinking-parts.json"), stream=False)
    assert reply.message["content"].startswith("Crossing a river is quite different")
    assert reply.message["reasoning_content"].startswith("**Analogizing crossing a river**\n\nThe user is asking")
    assert reply.finish_reason == "stop" and reply.meta == {}


@pytest.mark.parametrize("chunk", PIECES)
def test_streamed_thinking_parts_are_reasoning_never_shown_text(chunk: int | None) -> None:
    shown: list[str] = []
    reply = replay("openai", recording("mistral-magistral-thinking-parts.sse"), stream=True, chunk=chunk, shown=shown)
    assert reply.message["reasoning_content"] == "Okay, the user is asking how to cross the street."
    text = "".join(shown)
    assert reply.message["content"] == text
    assert text.startswith(" be aware of your surroundings") and text.endswith("feel free to share!")
    assert "Okay" not in text


def test_thinking_parts_are_replayed_like_reasoning_content() -> None:
    reply = replay("openai", recording("mistral-magistral-thinking-parts.json"), stream=False)
    call = {"id": "c", "type": "function", "function": {"name": "read", "arguments": "{}"}}
    history = [
        *HISTORY,
        {**reply.message, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c", "content": "A"},
    ]
    body = get_adapter("deepseek").build_body(
        model="m", history=history, tools=None, max_tokens=None, use_max_tokens=False, stream=False, extra_body=None
    )
    assert body["messages"][2]["reasoning_content"] == reply.message["reasoning_content"]


# --- 5: refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stream", "chunk"), [(False, None), (True, None), (True, 3)], ids=["json", "sse", "sse-3-byte-pieces"]
)
def test_an_openai_refusal_is_the_answer_marked_as_one(stream: bool, chunk: int | None) -> None:
    shown: list[str] = []
    name = "openai-refusal.sse" if stream else "openai-refusal.json"
    reply = replay("openai", recording(name), stream=stream, chunk=chunk, shown=shown)
    assert reply.message["content"] == "I'm sorry, I cannot assist with that request."
    assert reply.meta["refusal"] is True and reply.message["_refusal"] is True
    assert reply.finish_reason == "stop"
    if stream:
        assert "".join(shown) == reply.message["content"]


@pytest.mark.parametrize(
    ("stream", "chunk"), [(False, None), (True, None), (True, 3)], ids=["json", "sse", "sse-3-byte-pieces"]
)
def test_an_anthropic_refusal_keeps_the_text_before_it(stream: bool, chunk: int | None) -> None:
    name = "anthropic-refusal-after-text.sse" if stream else "anthropic-refusal-after-text.json"
    reply = replay("anthropic", recording(name), stream=stream, chunk=chunk)
    assert reply.message["content"] == "Here is an overview of the topic."
    assert reply.finish_reason == "stop" and reply.meta == {"refusal": True}
    assert "_anthropic_content" not in reply.message  # a refused turn is not replayed as it was


def test_an_openai_refusal_after_text_comes_after_it() -> None:
    body = orjson.loads(recording("openai-refusal.json"))
    body["choices"][0]["message"]["content"] = "Let me think."
    reply = replay("openai", orjson.dumps(body), stream=False)
    assert reply.message["content"] == "Let me think.\n\nI'm sorry, I cannot assist with that request."


# --- 7: an error inside a stream keeps its usage for after_response -----------------------------


@pytest.mark.parametrize("chunk", PIECES)
def test_an_error_inside_a_stream_reaches_after_response_with_its_usage(chunk: int | None) -> None:
    observed: list[dict[str, Any]] = []
    with pytest.raises(ProviderError, match="model stream reported an error: Token limit reached"):
        replay("openai", recording("openrouter-minimax-stream-error.sse"), stream=True, chunk=chunk, observed=observed)
    assert len(observed) == 1
    usage = observed[0]["usage"]
    assert (usage["prompt_tokens"], usage["completion_tokens"]) == (43, 10)
    assert observed[0]["error"] == {"code": 400, "message": "Token limit reached"}


def test_a_stream_that_broke_before_any_event_reports_nothing() -> None:
    observed: list[dict[str, Any]] = []
    with pytest.raises(TransportError):
        replay("openai", b"", stream=True, status=502, observed=observed)
    assert observed == []


# --- 8: OpenRouter's upstream reason, bounded, never its headers --------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_an_openrouter_error_shows_the_upstream_reason(stream: bool) -> None:
    raw = recording("openrouter-429-provider-returned-error.json")
    with pytest.raises(TransportError) as caught:
        replay("openai", raw, stream=stream, status=429)
    message = str(caught.value)
    assert "HTTP 429: Provider returned error (Chutes: deepseek/deepseek-chat-v3-0324:free is temporarily" in message
    assert "X-RateLimit" not in message and "user_redacted" not in message


def test_an_upstream_reason_is_bounded() -> None:
    body = orjson.loads(recording("openrouter-429-provider-returned-error.json"))
    body["error"]["metadata"]["raw"] = {"error": {"message": "x" * 5000}}
    with pytest.raises(TransportError) as caught:
        replay("openai", orjson.dumps(body), stream=False, status=429)
    assert 500 < len(str(caught.value)) < 800 and str(caught.value).count("x") <= 500


@pytest.mark.parametrize("chunk", PIECES)
def test_an_openrouter_error_inside_a_stream_shows_the_upstream_reason(chunk: int | None) -> None:
    error = orjson.loads(recording("openrouter-429-provider-returned-error.json"))["error"]
    raw = b"data: " + orjson.dumps({"id": "gen-1", "error": error, "choices": []}) + b"\n\ndata: [DONE]\n\n"
    with pytest.raises(ProviderError, match=r"Provider returned error \(Chutes: deepseek/deepseek-chat-v3-0324"):
        replay("openai", raw, stream=True, chunk=chunk)


# --- 9: text blocks that another block separates stay apart -------------------------------------


@pytest.mark.parametrize(
    ("stream", "chunk"), [(False, None), (True, None), (True, 3)], ids=["json", "sse", "sse-3-byte-pieces"]
)
def test_text_blocks_around_a_server_tool_are_kept_apart(stream: bool, chunk: int | None) -> None:
    shown: list[str] = []
    name = "anthropic-web-search-text-blocks.sse" if stream else "anthropic-web-search-text-blocks.json"
    reply = replay("anthropic", recording(name), stream=stream, chunk=chunk, shown=shown)
    content = reply.message["content"]
    assert "up-to-date information.\n\nBased on the search results" in content
    # citation pieces are one paragraph: joined as they are
    assert "- Temperature: 66°F with clear skies\n- Wind: W at 3 mph" in content
    if stream:
        assert "".join(shown) == content
