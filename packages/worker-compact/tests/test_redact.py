"""Secret redaction and UTF-8 safety (seed 004)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_compact.redact import _COVER, _COVER_BY_LETTER, GATES, may_contain_secret, redact
from i_compact.textsafe import scrub, scrub_value


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("key is sk-proj-AbCdEfGhIjKlMnOpQrStUv123456", "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456", "api_key"),
        ("export OPENAI_API_KEY=abc123def456ghi", "abc123def456ghi", "secret"),
        ('{"password": "hunter2hunter2"}', "hunter2hunter2", "password"),
        ("git clone https://bob:s3cr3tP4ss@example.com/r.git", "s3cr3tP4ss", "password"),
        ("Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234", "token"),
        ("ghp_" + "a1" * 18, "ghp_" + "a1" * 18, "github_token"),
        ("AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", "aws_access_key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow", "private_key"),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "eyJhbGciOiJIUzI1", "jwt"),
    ],
)
def test_secret_values_are_replaced_by_a_marker_naming_the_kind(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_names_and_locations_survive() -> None:
    out = redact("export OPENAI_API_KEY=abc123def456ghi  # stored in ~/.config/keys.env")
    assert "OPENAI_API_KEY" in out and "~/.config/keys.env" in out


def test_references_and_ids_are_not_secrets() -> None:
    for text in (
        '{"transaction_id": "tx_0042"}',
        "token_id=tok_12345678",
        "api_key_env=OPENAI_API_KEY",
        "password=$DB_PASSWORD",
        '"max_tokens": 4096',
        "input_tokens: 1234567",
        "author: someone-long",
    ):
        assert redact(text) == text


def test_pytest_node_ids_scopes_and_paths_are_not_secrets() -> None:
    # Found by bench/compaction: a failing test whose file name contained "token" lost its
    # node id (the error to fix) to a false "name: value" secret match.
    for text in (
        "FAILED tests/test_token_357.py::test_buffer_55 - AssertionError",
        "use token::Tokenizer::new(input) here",
        "see config/secret_store.py:12",
    ):
        assert redact(text) == text
    assert "abcdef123456" not in redact("TOKEN: abcdef123456")


def test_the_fast_gate_covers_every_pattern_gate() -> None:
    assert all(any(cover in gate for cover in _COVER) for gate in GATES)
    assert all(letter in word for letter, words in _COVER_BY_LETTER for word in words)
    assert not may_contain_secret("tests/test_x.py::case_1 PASSED\n3 passed in 0.2s")
    assert may_contain_secret("Authorization: BEARER x")


@given(
    st.text(alphabet=st.sampled_from(list("kKeEyYtToOnNsS-_:/@=xXaAiIzZgGhHpPbBrRcCdDlLwW 0123456789")), max_size=60)
)
def test_text_without_a_gate_word_is_never_changed(text: str) -> None:
    if not may_contain_secret(text):
        assert redact(text) == text


def test_scrub_replaces_lone_surrogates_only() -> None:
    assert scrub("a\ud800b") == "a\ufffdb"
    assert scrub("ok 😀") == "ok 😀"
    assert scrub_value({"k\udfff": ["x\ud800"]}) == {"k\ufffd": ["x\ufffd"]}
