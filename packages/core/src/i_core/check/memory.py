"""The memory module's invariants: its declared tools work as a round trip, arguments outside the
schema and secret values are refused with error frames, ``before_turn`` reports the memory."""

from __future__ import annotations

from typing import Any

from i_protocol import ErrorFrame

from ..hook_results import CHECKS
from ..modules import MODULES
from .probe import CheckFailed, Probe, Run, expect_error
from .samples import kept_unrelated, with_unrelated

_SECRET = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def _tool(probe: Probe, name: str, arguments: dict[str, Any]) -> str:
    sent = {"name": name, "arguments": arguments}
    result = CHECKS["tool"](probe.call("tool", sent), sent)
    return str(result.output)


def round_trip(run: Run) -> str:
    """set → get (the exact value) → list → delete → get (an error): every declared tool answers."""
    declared = sorted(tool["name"] for tool in MODULES["memory"].tools)
    value = "make all && make test\n(tabs\tkept)"
    with run.probe() as probe:
        _tool(probe, "memory_set", {"key": "build", "value": value})
        got = _tool(probe, "memory_get", {"key": "build"})
        if got != value:
            raise CheckFailed(f"memory_get returned {got[:60]!r}, not the value stored")
        if "build" not in _tool(probe, "memory_list", {}):
            raise CheckFailed("memory_list does not list the key just stored")
        _tool(probe, "memory_delete", {"key": "build"})
        expect_error(probe, "tool", {"name": "memory_get", "arguments": {"key": "build"}}, "a deleted key")
    return f"{', '.join(declared)} answered"


def error_rules(run: Run) -> str:
    """An unknown tool, an argument outside the schema and a secret value get error frames; the
    secret is never echoed."""
    with run.probe() as probe:
        expect_error(probe, "tool", {"name": "x_check_tool", "arguments": {}}, "an unknown tool")
        expect_error(
            probe, "tool", {"name": "memory_get", "arguments": {"key": "k", "workspace_id": "x"}}, "an unknown argument"
        )
        try:
            probe.call("tool", {"name": "memory_set", "arguments": {"key": "token", "value": _SECRET}})
        except ErrorFrame as exc:
            if _SECRET in exc.problem:
                raise CheckFailed("memory_set refused a secret value but echoed it in the error") from None
        else:
            raise CheckFailed("memory_set stored a GitHub token; memory must refuse secret values")
    return "unknown tool, unknown argument and secret value refused"


def context(run: Run) -> str:
    """``before_turn`` answers a valid context that holds the stored entry, unrelated fields kept."""
    with run.probe() as probe:
        _tool(probe, "memory_set", {"key": "style", "value": "tabs, not spaces"})
        sent = with_unrelated({"messages": [{"role": "system", "content": "s"}], "workspace": run.site.workspace})
        answer = probe.call("before_turn", sent)
    additions = CHECKS["before_turn"](answer, sent)
    problem = kept_unrelated(answer)
    if problem:
        raise CheckFailed(f"before_turn: {problem}")
    sources = [name for name, state in additions.context.items() if "style" in state["entries"]]
    if not sources:
        raise CheckFailed("before_turn reported no context with the stored entry 'style'")
    return f"context.{sources[0]} holds the entry"


CHECKS_OF_MODULE = (
    ("memory tools: round trip", round_trip),
    ("memory tools: error rules", error_rules),
    ("before_turn: memory context", context),
)
