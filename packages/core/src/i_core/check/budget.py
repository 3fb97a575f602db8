"""The budget module's invariants: a ``budget_result`` the core can read (``BudgetVerdict``), every
input field kept (``compact_plan`` receives this very answer), error frames for a bad policy."""

from __future__ import annotations

from typing import Any

from ..hook_results import CHECKS
from .probe import CheckFailed, Run, expect_error
from .samples import budget_policy, history, with_unrelated


def _request() -> dict[str, Any]:
    return with_unrelated(
        {
            "model": "check-model",
            "protocol": "openai",
            "origin": "http://127.0.0.1:9",
            "budget": budget_policy(),
            "max_tokens": 512,
            "history": history(),
            "tools": [{"name": "read", "description": "Read a file.", "parameters": {"type": "object"}}],
            "pending_tool_calls": 1,
            "compact": True,
            "usage": None,
            "cut": None,
        }
    )


def verdict(run: Run) -> str:
    """The answer's ``budget_result`` parses as the core's verdict."""
    sent = _request()
    with run.probe() as probe:
        result = CHECKS["context_budget"](probe.call("context_budget", sent), sent)
    v = result.verdict
    return f"fits={v.fits}, estimate={v.estimate}, capacity={v.capacity}, recommend_compact={v.recommend_compact}"


def metadata_kept(run: Run) -> str:
    """Every field the budget was sent comes back unchanged: it adds ``budget_result`` only."""
    sent = _request()
    with run.probe() as probe:
        answer = probe.call("context_budget", sent)
    changed = sorted(key for key in sent if answer.get(key, KeyError) != sent[key])
    if changed:
        raise CheckFailed(f"context_budget dropped or changed its input field(s) {', '.join(changed)}")
    return f"all {len(sent)} input fields kept"


def bad_policy(run: Run) -> str:
    """A policy without ``context_window`` (the core has no capacity table) is an error frame."""
    data = {**_request(), "budget": {"output_reserve": 512}}
    with run.probe() as probe:
        return expect_error(probe, "context_budget", data, "a budget without context_window")


CHECKS_OF_MODULE = (
    ("context_budget: budget_result shape", verdict),
    ("context_budget: input metadata kept", metadata_kept),
    ("context_budget: error frame for a bad policy", bad_policy),
)
