"""The core keeps only plausible usage anchors, for the tools and system message they covered."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from i_core.budget import MARGIN_TOKENS, Budget
from i_core.settings import parse_api_config
from i_protocol.history import wire_bytes

CONFIG = parse_api_config(
    {"protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", "budget": {"context_window": 100_000}}
)
HISTORY = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hello"}]
TOOLS = [{"name": "read", "description": "read a file", "parameters": {"type": "object"}}]
TEMPLATE = {"model": "m", "prefix_messages": 2, "prefix_fingerprint": "sha256:x", "tools_fingerprint": "sha256:t"}


def _budget() -> tuple[Budget, dict[str, Any], list[str]]:
    meta: dict[str, Any] = {}
    budget = Budget(hooks=None, config=CONFIG, meta=meta)  # type: ignore[arg-type]  # no hook is called
    said: list[str] = []
    budget.warn = said.append
    return budget, meta, said


def _sent() -> Any:
    return SimpleNamespace(verdict=SimpleNamespace(raw={"anchor": dict(TEMPLATE)}))


def test_a_plausible_count_is_stored_with_the_digests_of_what_it_covered() -> None:
    budget, meta, said = _budget()
    budget.record_usage(_sent(), {"input_tokens": 40, "output_tokens": 3}, HISTORY, TOOLS)
    anchor = meta["usage_anchor"]
    assert anchor["input_tokens"] == 40 and len(anchor["tools_digest"]) == len(anchor["system_digest"]) == 32
    assert budget.usable_anchor([*HISTORY, {"role": "assistant", "content": "hi"}], TOOLS) == anchor
    assert said == []


def test_an_impossible_input_count_is_not_stored_and_said_once() -> None:
    budget, meta, said = _budget()
    meta["usage_anchor"] = {"stale": True}
    budget.record_usage(_sent(), {"input_tokens": 2_000_000, "output_tokens": 3}, HISTORY, TOOLS)
    assert "usage_anchor" not in meta
    budget.record_usage(_sent(), {"input_tokens": 2_000_000, "output_tokens": 3}, HISTORY, TOOLS)
    (line,) = said
    assert "2000000 input tokens" in line and "impossible" in line
    # the bound: the request's bytes plus the margin; one more token is impossible
    bound = sum(map(wire_bytes, HISTORY)) + wire_bytes(TOOLS) + MARGIN_TOKENS
    budget.record_usage(_sent(), {"input_tokens": bound, "output_tokens": 3}, HISTORY, TOOLS)
    assert meta["usage_anchor"]["input_tokens"] == bound


def test_an_impossible_output_count_is_not_stored() -> None:
    budget, meta, _said = _budget()
    budget.record_usage(_sent(), {"input_tokens": 40, "output_tokens": 5_000_000}, HISTORY, TOOLS)
    assert "usage_anchor" not in meta


def test_the_anchor_is_dropped_when_the_tools_or_the_system_message_change() -> None:
    budget, meta, _said = _budget()
    budget.record_usage(_sent(), {"input_tokens": 40, "output_tokens": 3}, HISTORY, TOOLS)
    assert budget.usable_anchor(HISTORY, []) is None and "usage_anchor" not in meta
    budget.record_usage(_sent(), {"input_tokens": 40, "output_tokens": 3}, HISTORY, TOOLS)
    other = [{"role": "system", "content": "You are someone else."}, HISTORY[1]]
    assert budget.usable_anchor(other, TOOLS) is None and "usage_anchor" not in meta


def test_a_poisoned_anchor_on_disk_is_dropped_at_the_first_look() -> None:
    budget, meta, said = _budget()
    meta["usage_anchor"] = {**TEMPLATE, "input_tokens": 2_000_000, "output_tokens": 3}  # no digests: an older core
    assert budget.usable_anchor(HISTORY, TOOLS) is None
    assert "usage_anchor" not in meta and "dropped" in said[0]
