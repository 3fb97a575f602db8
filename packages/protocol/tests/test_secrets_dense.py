"""The secret table on text dense with its trigger words (URLs, ``key=``, ``token``): the same
findings as each pattern run on its own, at a cost linear in the text (counted in operations)."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_protocol import secrets

# Built from parts so that no scanner mistakes this file for a leak.
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"

# Real-shaped shell output: every line holds a gate word, few hold a secret.
NOISE = [
    "2026-12-01T14:02:11Z INFO url=https://api.example.com/v2/items?page_token=CAESBg&key_id=k7 token_count=912",
    "  Downloading https://files.pythonhosted.org/packages/ab/cd/httpx-0.27.0-py3-none-any.whl#sha256=3f9a2b7c4d1e",
    "    return sorted(items, key=lambda item: item.key)  # the sort key, not a secret",
    "I_MAX_TOKENS=4096 I_STOP_TOKEN_IDS=50256 I_CACHE_KEY=prompt-3f9a2b7c4d1e8f0a API_KEY_ENV=OPENAI_API_KEY",
    "> x-api-key-env: ANTHROPIC_API_KEY",
    "< x-ratelimit-remaining-tokens: 29871",
    "PYTEST_ADDOPTS=--key-file=tests/keys/test.pem  SECRET_STORE=vault://kv/app/7",
    "FAILED tests/test_auth.py::test_api_key_rotation - AssertionError: key=key_7 token_id=tok_7",
]
# (line, the secret value in it, the pattern that finds it)
PLANTED = [
    ("> Authorization: Bearer sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "sk_api_key"),
    (f"GH_TOKEN={GITHUB}", "github_token"),
    ("DATABASE_URL=postgres://app:Zq8Rt5Lm2Xy9@db.internal:5432/app", "url_password"),
    ("export SERVICE_TOKEN=s3cr3tValue42abc", "secret_assignment"),
    ("deploy --api-token hunter2_x1 --user bob", "secret_flag"),
    ('{"password": "hunter2hunter2", "user": "bob"}', "secret_label"),
]
VALUES = {
    "sk_api_key": PLANTED[0][0].split("Bearer ")[1],
    "github_token": GITHUB,
    "url_password": "Zq8Rt5Lm2Xy9",
    "secret_assignment": "s3cr3tValue42abc",
    "secret_flag": "hunter2_x1",
    "secret_label": "hunter2hunter2",
}


def dense_log(repeats: int) -> str:
    """``repeats`` blocks of noise, each with one planted secret line (in turn)."""
    lines: list[str] = []
    for block in range(repeats):
        lines += NOISE
        lines.append(PLANTED[block % len(PLANTED)][0])
    return "\n".join(lines) + "\n"


def test_a_dense_log_gives_exactly_the_planted_secrets() -> None:
    text = dense_log(len(PLANTED) * 3)
    found = [(match.name, text[match.start : match.end]) for match in secrets.find_secrets(text)]
    assert found == [(name, VALUES[name]) for _ in range(3) for _, name in PLANTED]
    out, count = secrets.redact(text)
    assert count == len(found) and not any(value in out for value in VALUES.values())
    assert all(line in out for line in NOISE)  # no false positive: every noise line is kept whole


def per_pattern(text: str) -> list[tuple[int, int, str]]:
    """Each pattern of the table run on its own over ``text``: the reference for the joint scan."""
    spans = [(start, end, pattern.name) for pattern in secrets._TABLE for start, end in secrets._spans(pattern, text)]
    return sorted(spans)


def joint(text: str) -> list[tuple[int, int, str]]:
    return sorted(
        (start, end, secrets._TABLE[rank].name) for rank, spans in secrets._found(text) for start, end in spans
    )


FRAGMENTS = st.sampled_from(
    ["password", "pass", "pwd", "token", "key", "api_key", "API key", "--password", "--api-key", "secret", "credentials",
     "page_token", "max_tokens", "token_id", "KEY", "access", "=", ":", ": ", "==", ":=", "=>", " ", "\t", '"', "'",
     "\\", ",", "}", "\n", "$X", "f(", "[", "/", "hunter2", "a1B2c3D4e5F6g7H8i9J0", "x", "_", ".", "-", "é", "\u212a",
     "\u0130", "https://bob:", "@host", "Bearer ", "Cookie: a="]
)  # fmt: skip


@settings(max_examples=400)
@given(st.lists(FRAGMENTS, max_size=30).map("".join))
def test_the_joint_name_scan_finds_what_each_pattern_finds_alone(text: str) -> None:
    # The three name patterns share one candidate scan (in the lower-cased text when it is
    # ASCII, "\u212a" and "\u0130" lower-case to ASCII or change length: the other path).
    assert joint(text) == per_pattern(text)


class Counting:
    """A compiled pattern that counts its calls (the unit of work of a scan)."""

    def __init__(self, pattern: re.Pattern[str], counts: dict[str, int]) -> None:
        self.pattern, self.counts, self.groupindex = pattern, counts, pattern.groupindex

    def search(self, *args: Any) -> re.Match[str] | None:
        self.counts["calls"] += 1
        return self.pattern.search(*args)

    def match(self, *args: Any) -> re.Match[str] | None:
        self.counts["calls"] += 1
        return self.pattern.match(*args)


def operations(text: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """Regex calls (searches and anchored matches of every pattern) that ``find_secrets`` makes."""
    counts = {"calls": 0}
    with monkeypatch.context() as patch:
        table = tuple(dataclasses.replace(p, regex=Counting(p.regex, counts)) for p in secrets._TABLE)  # type: ignore[arg-type]
        patch.setattr(secrets, "_TABLE", table)
        patch.setattr(secrets, "_VALUE_RE", Counting(secrets._VALUE_RE, counts))
        for name in ("_NAME_CANDIDATES", "_ALL_NAME_CANDIDATES"):
            patch.setattr(secrets, name, tuple(Counting(pattern, counts) for pattern in getattr(secrets, name)))
        secrets.find_secrets(text)
    return counts["calls"]


@pytest.mark.parametrize("unit", [dense_log(6), "key=" * 50, "the key is here; a token: yes\n" * 8])
def test_work_is_linear_in_the_text(unit: str, monkeypatch: pytest.MonkeyPatch) -> None:
    one = operations(unit, monkeypatch)
    assert one > len(secrets._TABLE)
    for copies in (2, 4, 8):
        # Doubling the text doubles the work, give or take each pattern's last, failing search
        # (one per text, not one per copy).
        work = operations(unit * copies, monkeypatch)
        assert copies * (one - len(secrets._TABLE)) <= work <= copies * one


def test_a_candidate_name_costs_a_small_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    # Text full of ``key=`` words: one candidate search and at most the three name patterns'
    # anchored matches (plus their value matches) per word, not a scan per pattern.
    text = "\n".join(NOISE * 50)
    words = len(re.findall(r"(?i)pass|pwd|secret|token|credential|key", text))
    assert operations(text, monkeypatch) <= 6 * words + 2 * len(secrets._TABLE)
