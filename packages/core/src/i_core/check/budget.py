"""The budget module's invariants: a ``budget_result`` the core can read (``BudgetVerdict``), every
input field kept (``compact_plan`` receives this very answer), error frames for a bad policy, and
estimates that let a real reduction pass seed 001 §7's token-reduction check."""

from __future__ import annotations

from typing import Any

from i_protocol.history import wire_bytes

from ..hook_results import CHECKS, BudgetCheck
from .probe import CheckFailed, Probe, Run, expect_error
from .samples import budget_policy, english_history, history, with_unrelated

REAL_BYTES_PER_TOKEN = 4
"""What a real server counts for English text (SPEC §6): the usage this check reports."""
REDUCED_SHARE = 0.4
"""The reduced history keeps this share of the anchored one's bytes: a reduction any real server sees."""


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


def _estimate(probe: Probe, messages: list[dict[str, Any]], usage: dict[str, Any] | None) -> BudgetCheck:
    sent = {
        **_request(),
        "budget": {"context_window": 200_000, "output_reserve": 4096},
        "history": messages,
        "tools": [],
        "pending_tool_calls": 0,
        "usage": usage,
    }
    check: BudgetCheck = CHECKS["context_budget"](probe.call("context_budget", sent), sent)
    return check


def real_reduction(run: Run) -> str:
    """Seed 001 §7, as a compaction applies it: anchored on real usage of a history (4 bytes per token
    of English), a history reduced to 40% of its bytes must be estimated below the anchored count,
    else every real compaction would fail ``not_reducing``."""
    full = english_history()
    asked, reply = full[:-1], full[-1]
    with run.probe() as probe:
        template = _estimate(probe, asked, None).verdict.raw.get("anchor")
        if not isinstance(template, dict):
            return "offers no usage anchor: the core applies only the comparable-estimate check"
        real = sum(wire_bytes(m) for m in asked) // REAL_BYTES_PER_TOKEN
        usage = {**template, "input_tokens": real, "output_tokens": wire_bytes(reply) // REAL_BYTES_PER_TOKEN}
        before = _estimate(probe, full, usage).verdict
        reduced = _reduced(full)
        after = _estimate(probe, reduced, usage).verdict
    if not before.anchored or before.estimate is None:
        method = before.estimate_method
        return f"does not anchor on real usage (estimate method {method!r}): the token check does not apply"
    size, reduced_size = sum(wire_bytes(m) for m in full), sum(wire_bytes(m) for m in reduced)
    if after.estimate is None or after.estimate >= before.estimate:
        raise CheckFailed(
            f"estimates a history reduced to {reduced_size} of {size} bytes at {after.estimate} tokens, not below "
            f"the {before.estimate} real usage anchored: every real compaction would fail not_reducing (seed 001 §7)"
        )
    return f"anchored {before.estimate} tokens; reduced to {100 * reduced_size // size}% of the bytes: {after.estimate}"


def _reduced(full: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The system message, a summary of the prefix, and the last round: ``REDUCED_SHARE`` of the bytes."""
    suffix = full[-4:]
    target = int(sum(wire_bytes(m) for m in full) * REDUCED_SHARE) - sum(wire_bytes(m) for m in (full[0], *suffix))
    prose = " ".join(str(m.get("content") or "") for m in full[1:-4])
    summary = {"role": "user", "content": "Summary of the earlier work: " + prose[: max(target - 64, 0)]}
    return [full[0], summary, *suffix]


CHECKS_OF_MODULE = (
    ("context_budget: budget_result shape", verdict),
    ("context_budget: input metadata kept", metadata_kept),
    ("context_budget: error frame for a bad policy", bad_policy),
    ("context_budget: a real reduction stays a reduction", real_reduction),
)
