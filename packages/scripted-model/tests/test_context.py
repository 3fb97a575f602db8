"""Context enforcement: each server style's exact refusal, its limits, and the capacity endpoints."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from scripted_http import PROSE, chat, get, post, send

from i_scripted import ScriptedModel, prompt_tokens


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


def _post(model: ScriptedModel, path: str, body: Any) -> tuple[int, Any]:
    status, raw = post(model.root_url, path, body)
    return status, orjson.loads(raw)


def test_llamacpp_counts_a_chat_request_exactly_with_apply_template_and_tokenize() -> None:
    body = {
        "model": "m",
        "messages": [{"role": "system", "content": "You are i."}, {"role": "user", "content": "Hello there, world."}],
        "tools": [{"type": "function", "function": {"name": "read", "description": "Read a file", "parameters": {}}}],
    }
    with ScriptedModel([{"text": "x"}], context_window=4096, context_style="llamacpp") as model:
        rendered = _post(model, "/apply-template", body)[1]["prompt"]
        tokens = _post(model, "/tokenize", {"content": rendered, "add_special": True})[1]["tokens"]
        plain = _post(model, "/tokenize", {"content": "Hello world."})[1]["tokens"]
        usage = _post(model, "/v1/chat/completions", body)[1]["usage"]
        assert model.served == 1 and len(model.probes) == 3  # counting consumes no step
    assert len(tokens) == prompt_tokens("openai", body) == usage["prompt_tokens"]
    assert len(plain) == 3


def test_vllm_tokenize_counts_messages_and_other_styles_do_not_serve_it() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "Hello there, world."}]}
    with ScriptedModel([], context_window=2048, context_style="vllm") as model:
        answer = _post(model, "/tokenize", body)[1]
        assert _post(model, "/apply-template", body)[0] == 404
    assert answer["count"] == prompt_tokens("openai", body) and answer["max_model_len"] == 2048
    with ScriptedModel([], context_window=2048, context_style="openai") as model:
        assert _post(model, "/tokenize", body)[0] == 404
