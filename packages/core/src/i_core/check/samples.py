"""The data a check sends: a realistic history with tool batches, and the marker of unrelated fields."""

from __future__ import annotations

import copy
from typing import Any

UNRELATED = "x_check_unrelated"
"""A field no module owns: every hook must return it unchanged (it answers the complete data)."""
UNRELATED_VALUE: dict[str, Any] = {"kept": [1, 2.5, None, True], "text": "héllo ☃", "nested": {"deep": {}}}


def with_unrelated(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` plus the unrelated marker field."""
    return {**data, UNRELATED: copy.deepcopy(UNRELATED_VALUE)}


def kept_unrelated(answer: dict[str, Any]) -> str | None:
    """None when the marker came back unchanged, else what happened to it."""
    if UNRELATED not in answer:
        return f"the answer dropped the field {UNRELATED!r} it was sent (a hook returns the complete data)"
    if answer[UNRELATED] != UNRELATED_VALUE:
        return f"the answer changed the field {UNRELATED!r}, which no module owns"
    return None


def _call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def history() -> list[dict[str, Any]]:
    """A finished session of 17 messages: three tasks, tool batches of one and two calls, an image."""
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    filler = " ".join(["The build log shows the same warning again."] * 20)
    return [
        {"role": "system", "content": "You are a careful agent."},
        {"role": "user", "content": "Fix the failing test in tests/test_parser.py. " + filler},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("call_1", "read", '{"path":"tests/test_parser.py"}')],
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": "def test_parse():\n    assert parse('1') == 1\n" + filler,
        },
        {"role": "assistant", "content": "The parser returns a string; I will change it to return an int."},
        {"role": "user", "content": "Go ahead, but do not touch setup.py. " + filler},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                _call("call_2", "edit", '{"path":"src/parser.py","old":"return s","new":"return int(s)"}'),
                _call("call_3", "shell", '{"command":"pytest -q"}'),
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": "edited src/parser.py"},
        {"role": "tool", "tool_call_id": "call_3", "content": "1 passed in 0.01s\n" + filler},
        {"role": "assistant", "content": "The test passes now. " + filler},
        {"role": "user", "content": "Now look at the screenshot of the coverage report. " + filler},
        {"role": "assistant", "content": None, "tool_calls": [_call("call_4", "view_image", '{"path":"cov.png"}')]},
        {"role": "tool", "tool_call_id": "call_4", "content": "Image attached"},
        {"role": "user", "content": [{"type": "text", "text": "[image of call_4]"}, image]},
        {"role": "assistant", "content": "Coverage is 91%; the parser module is fully covered."},
        {"role": "user", "content": "Thanks. Summarise what changed."},
        {"role": "assistant", "content": "src/parser.py now returns an int; tests pass; setup.py untouched."},
    ]


_TEXT = (
    "the parser reads each line of the configuration file and keeps the values it understands while "
    "warnings about unknown keys go to the log so that a later run can report them to the user who "
    "changed the file last week before the release was tagged and the tests were run again on every "
    "platform we support including the older machines in the build farm"
)
_WORDS = _TEXT.split()


def _prose(seed: int, words: int) -> str:
    """Deterministic English-like text of ``words`` words (varied, so no density is a repeat's)."""
    picked = [_WORDS[(seed * 7 + i * i * 3 + i) % len(_WORDS)] for i in range(words)]
    return " ".join(" ".join(picked[i : i + 12]).capitalize() + "." for i in range(0, words, 12))


def english_history(rounds: int = 8) -> list[dict[str, Any]]:
    """A long session in English (about 38 KB): requests, tool batches with long logs, answers; it
    ends with the assistant's reply to the last request."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    for n in range(rounds):
        messages += [
            {"role": "user", "content": f"Step {n}: " + _prose(n, 100)},
            {"role": "assistant", "content": None, "tool_calls": [_call(f"call_{n}", "shell", '{"command":"make"}')]},
            {"role": "tool", "tool_call_id": f"call_{n}", "content": _prose(n + 50, 600)},
            {"role": "assistant", "content": _prose(n + 100, 80)},
        ]
    return messages


def budget_policy() -> dict[str, Any]:
    """The ``budget`` object of an API config, as the core sends it."""
    return {"context_window": 8000, "output_reserve": 512}


def budget_output(history: list[dict[str, Any]]) -> dict[str, Any]:
    """What ``compact_plan`` receives: a budget worker's answer that recommends compacting."""
    return {
        "model": "check-model",
        "protocol": "openai",
        "origin": "http://127.0.0.1:9",
        "budget": budget_policy(),
        "max_tokens": 512,
        "history": history,
        "tools": [],
        "pending_tool_calls": 0,
        "compact": True,
        "usage": None,
        "cut": None,
        "force": True,
        "budget_result": {
            "version": 1,
            "fits": True,
            "estimate": 7000,
            "comparable_estimate": 7000,
            "capacity": 7328,
            "output_reserve": 512,
            "trigger": 6400,
            "recommend_compact": True,
            "reasons": [],
        },
    }
