"""The local summary's error evidence and blockers: the newest ones, as if the error lines of every
tool result had been searched, at a cost that does not grow with the number of results (issue 18,
part 4: on real output the error-line search was the costliest part of a reduction)."""

from __future__ import annotations

from typing import Any

import pytest
from builders import assistant, summary, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import local_summary as local
from i_compact import reduction
from i_compact.transcript import analyse

CAPS = {"Evidence": 12, "Blockers": 3}


def history(errors_at: set[int], call_ids: list[str], head: str | None = None) -> list[dict[str, Any]]:
    """Shell logs (an error line in those of ``errors_at``), after an earlier summary ``head``."""
    messages: list[dict[str, Any]] = [summary(head)] if head is not None else []
    messages.append(user("Fix the build; do not push without asking."))
    for index, call_id in enumerate(call_ids):
        log = "\n".join(f"compiling module_{j}.c (errors: none so far)" for j in range(20))
        if index in errors_at:
            log += f"\nError: undefined symbol sym_{index % 4}\nFAILED test_{index}"
        if index % 5 == 0:
            log = '{"path": "a.log", "truncated": true, "linesOmitted": 40}'
        messages += [assistant(f"step {index}", [(call_id, "shell", '{"cmd":"make"}')]), tool(call_id, log)]
    messages.append(assistant("done"))
    return messages


def sections(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    return local._evidence(messages, analyse(messages, facts_only=True), "keep")


def every_result_searched(messages: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Evidence and blockers as they read when each result's error lines are found, in order."""
    analysis = analyse(messages, facts_only=True)
    found: dict[str, list[str]] = {name: [] for name in CAPS}
    if messages[0].get("_compaction"):
        local._carry(messages[0]["content"], found)
    for index, message in enumerate(messages):
        if message["role"] != "tool":
            continue
        name, call_id = analysis.calls[message["tool_call_id"]][0], message["tool_call_id"]
        result = analysis.reductions[index]
        found["Evidence"] += [f"PARTIAL result of {name} call {call_id}: {flag}" for flag in result.truncation[:3]]
        for line in result.errors[:2]:  # read for every result: each one searched
            quoted = f"{name} call {call_id}: {local._quote(local._clean(line), local._QUOTE)}"
            found["Evidence"].append(quoted)
            found["Blockers"].append(f"error seen in {quoted}")
    return {name: list(dict.fromkeys(found[name]))[-cap:] for name, cap in CAPS.items()}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 39), max_size=40).map(set),
    st.lists(st.sampled_from(["c0", "c1", "c2"]), min_size=40, max_size=40),
    st.booleans(),
    st.booleans(),
)
def test_the_newest_errors_are_those_of_searching_every_result(
    errors_at: set[int], repeated: list[str], unique: bool, carried: bool
) -> None:
    # Unique call ids take the lazy path; repeated ones (real transcripts reuse them) the eager
    # one; an earlier summary may carry an item that a result of this prefix gives again.
    call_ids = [f"call_{i}" for i in range(40)] if unique else [f"{c}_{i % 7}" for i, c in enumerate(repeated)]
    head = None
    if carried:
        head = (
            "## Evidence\n- shell call call_39: “Error: undefined symbol sym_3”\n- shell call c0_1: “FAILED test_8”\n"
            "## Blockers\n- error seen in shell call call_38: “Error: undefined symbol sym_2”"
        )
    messages = history(errors_at, call_ids, head)
    got = sections(messages)
    assert {name: got[name] for name in CAPS} == every_result_searched(messages)


def test_a_call_id_with_spaces_still_gives_the_errors_of_every_result() -> None:
    messages = history(set(range(12)), [f"call {i} of 12" for i in range(12)])
    got = sections(messages)
    assert {name: got[name] for name in CAPS} == every_result_searched(messages)
    assert len(got["Blockers"]) == CAPS["Blockers"]


@pytest.mark.parametrize("results", [40, 80, 160])
def test_only_the_newest_results_are_searched(results: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Work counted in operations: with errors in every result, the same few results are searched
    # however many there are (before: every one of them, each a scan of the whole text).
    searched: list[str] = []
    real = reduction._error_lines

    def counting(text: str, limit: int = 8) -> list[str]:
        searched.append(text)
        return real(text, limit)

    monkeypatch.setattr(reduction, "_error_lines", counting)
    messages = history(set(range(results)), [f"call_{i}" for i in range(results)])
    got = sections(messages)
    assert len(searched) <= 10
    assert got["Blockers"][-1] == f"error seen in shell call call_{results - 1}: “FAILED test_{results - 1}”"
    assert len(got["Evidence"]) == CAPS["Evidence"]
