"""The cache module's invariants: ``before_request`` never overwrites a field the request already
has (in every mode that adds fields), keeps the origin, and the two observers answer objects."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..hook_results import CHECKS, RequestChange
from .probe import CheckFailed, Run
from .samples import kept_unrelated, with_unrelated

_URL = "http://127.0.0.1:9/v1/chat/completions"
_PRESET: dict[str, dict[str, Any]] = {
    "openai": {"prompt_cache_key": "set-by-the-caller", "prompt_cache_retention": "in_memory"},
    "anthropic": {"cache_control": {"type": "ephemeral", "ttl": "1h"}},
}


def _request(mode: str) -> dict[str, Any]:
    body = {
        "model": "check-model",
        "max_tokens": 64,
        "messages": [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "hello"}],
        **_PRESET[mode],
    }
    return with_unrelated(
        {
            "url": _URL,
            "body": body,
            "protocol": mode,
            "model": "check-model",
            "budget": {"context_window": 8000},
            "request_meta": {"x_check_meta": "kept"},
        }
    )


def _prepare(run: Run, mode: str) -> tuple[dict[str, Any], dict[str, Any], RequestChange]:
    Path(run.config_file("cache.json")).write_bytes(orjson.dumps({"mode": mode, "namespace": "check"}))
    sent = _request(mode)
    with run.probe() as probe:
        answer = probe.call("before_request", sent)
    return sent, answer, CHECKS["before_request"](answer, sent)


def never_overwrites(run: Run) -> str:
    """In openai and anthropic mode, every body field already present comes back unchanged."""
    added: list[str] = []
    for mode in _PRESET:
        sent, answer, change = _prepare(run, mode)
        changed = sorted(k for k in sent["body"] if change.body.get(k, KeyError) != sent["body"][k])
        if changed:
            raise CheckFailed(f"before_request ({mode} mode) overwrote or dropped body field(s) {', '.join(changed)}")
        if change.meta.get("x_check_meta") != "kept":
            raise CheckFailed(f"before_request ({mode} mode) dropped request_meta.x_check_meta")
        problem = kept_unrelated(answer)
        if problem:
            raise CheckFailed(f"before_request: {problem}")
        added += [f"{mode}: +{k}" for k in sorted(set(change.body) - set(sent["body"]))]
    return "existing fields kept" + (f" ({'; '.join(added)})" if added else "")


def observers(run: Run) -> str:
    """``request_retry`` and ``after_response`` answer objects and keep unrelated fields."""
    Path(run.config_file("cache.json")).write_bytes(orjson.dumps({"mode": "openai", "namespace": "check"}))
    sent = _request("openai")
    with run.probe() as probe:
        change = CHECKS["before_request"](probe.call("before_request", sent), sent)
        retry = with_unrelated({"request_meta": change.meta, "attempt": 1, "reason": "HTTP 503", "protocol": "openai"})
        response = with_unrelated(
            {
                "response": {
                    "choices": [{"message": {"role": "assistant", "content": "hi"}, "finish_reason": "stop"}],
                    "usage": {
                        "prompt_tokens": 20,
                        "completion_tokens": 1,
                        "prompt_tokens_details": {"cached_tokens": 0},
                    },
                },
                "request_meta": change.meta,
                "protocol": "openai",
                "model": "check-model",
            }
        )
        for event, data in (("request_retry", retry), ("after_response", response)):
            problem = kept_unrelated(probe.call(event, data))
            if problem:
                raise CheckFailed(f"{event}: {problem}")
    return "request_retry and after_response answered"


CHECKS_OF_MODULE = (
    ("before_request: never overwrites request fields", never_overwrites),
    ("request_retry, after_response: answered", observers),
)
