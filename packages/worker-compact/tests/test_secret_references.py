"""The local summary's secret references: the newest ones, as if every tool result were redacted,
at a cost that does not grow with the number of results that hold secrets (issue 18, part 4)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from builders import assistant, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import local_summary as local
from i_compact.redact import redact, secret_references
from i_compact.transcript import analyse

SECTION = "Secret references (values never kept)"
CAP = 8


def history(secrets_at: list[int], call_ids: list[str], user_secret_at: set[int]) -> list[dict[str, Any]]:
    """Tool results (a shell log, with a password in those of ``secrets_at``) and user messages."""
    messages: list[dict[str, Any]] = [user("Deploy the service; do not push without asking.")]
    for index, call_id in enumerate(call_ids):
        if index in user_secret_at:
            messages.append(user(f"use DB_PASS=hunter{index}x for step {index}"))
        log = "\n".join(f"GET https://api.example.com/v1/items?page={j}&key_id=k{j} token_count={j}" for j in range(30))
        if index in secrets_at:
            log += f"\nexport SERVICE_{index % 3}_TOKEN=s3cr3tValue{index}abc"
        messages += [assistant(f"step {index}", [(call_id, "shell", '{"cmd":"curl"}')]), tool(call_id, log)]
    messages.append(assistant("done"))
    return messages


def section(messages: list[dict[str, Any]]) -> list[str]:
    """The secret-reference items of the local summary's evidence."""
    return local._evidence(messages, analyse(messages), "keep")[SECTION]


def every_result_redacted(messages: list[dict[str, Any]]) -> list[str]:
    """The section as it reads when each user message and tool result is redacted, in order."""
    analysis = analyse(messages)
    items: list[str] = []
    for index, message in enumerate(messages):
        if message["role"] == "user":
            items += [f"{ref} in a user message" for ref in secret_references(local._clean(message["content"]))[:5]]
        elif message["role"] == "tool":
            name = analysis.calls[message["tool_call_id"]][0]
            refs = secret_references(redact(analysis.reductions[index].text))[:5]
            items += [f"{ref} in the output of {name} call {message['tool_call_id']}" for ref in refs]
    return list(dict.fromkeys(items))[-CAP:]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 29), max_size=30).map(set),
    st.lists(st.sampled_from(["c0", "c1", "c2"]), min_size=30, max_size=30),
    st.lists(st.integers(0, 29), max_size=4).map(set),
    st.booleans(),
)
def test_the_newest_references_are_those_of_redacting_every_result(
    secrets_at: set[int], repeated: list[str], user_secret_at: set[int], unique: bool
) -> None:
    # Unique call ids take the lazy path; repeated ones (real transcripts reuse them) the eager one.
    call_ids = [f"call_{i}" for i in range(30)] if unique else [f"{c}_{i % 7}" for i, c in enumerate(repeated)]
    messages = history(sorted(secrets_at), call_ids, user_secret_at)
    assert section(messages) == every_result_redacted(messages)


def test_a_call_id_with_spaces_still_gives_the_references_of_every_result() -> None:
    messages = history(list(range(12)), [f"call {i} of 12" for i in range(12)], set())
    assert section(messages) == every_result_redacted(messages)
    assert len(section(messages)) == CAP


@pytest.mark.parametrize("results", [40, 80, 160])
def test_only_the_newest_results_are_redacted(results: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # Work counted in operations: with a secret in every result, CAP results are redacted for the
    # section, however many there are (before: every one of them, and a pattern scan over each).
    messages = history(list(range(results)), [f"call_{i}" for i in range(results)], set())
    redacted: list[str] = []
    real = local.redact

    def counting(text: str) -> str:
        if "GET https://" in text:  # a whole result, not an error line or a user message
            redacted.append(text)
        return real(text)

    monkeypatch.setattr(local, "redact", counting)
    items = section(messages)
    assert len(redacted) == CAP
    assert items == [
        f"SERVICE_{i % 3}_TOKEN (secret_assignment) in the output of shell call call_{i}"
        for i in range(results - CAP, results)
    ]


_NAMED_REFERENCE = re.compile(r"([A-Za-z_][A-Za-z0-9_.-]{1,80})[\"']?\s*[:=]\s*[\"']?\[REDACTED:(\w+)\]")
_PIECES = ["[REDACTED:secret_assignment]", "[REDACTED:bearer]", "DB_PASS", "a", "9", ".", "-", "_", "=", ":"]
_PIECES += [" ", "\n", '"', "'", "[", "x" * 79, "Y" * 82, "é"]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=25))
def test_references_are_what_the_name_pattern_finds_everywhere(pieces: list[str]) -> None:
    text = "".join(pieces)
    expected = [f"{name} ({kind})" for name, kind in _NAMED_REFERENCE.findall(text)]
    if not expected:
        expected = [f"unnamed {kind}" for kind in re.findall(r"\[REDACTED:(\w+)\]", text)]
    assert secret_references(text) == expected
