"""Secret redaction (the REDACT policy of i_protocol.secrets, as compaction uses it) and UTF-8
safety (seed 004). Each form the old i_compact.redact table caught keeps its case here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_compact.redact import redact, secret_references
from i_protocol.jsonsafe import map_strings, replace_surrogates
from i_protocol.secrets import may_contain_secret


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("key is sk-proj-AbCdEfGhIjKlMnOpQrStUv123456", "sk-proj-AbCdEfGhIjKlMnOpQrStUv123456", "sk_api_key"),
        ("export OPENAI_API_KEY=abc123def456ghi", "abc123def456ghi", "secret_assignment"),
        ('{"password": "hunter2hunter2"}', "hunter2hunter2", "secret_label"),
        ("git clone https://bob:s3cr3tP4ss@example.com/r.git", "s3cr3tP4ss", "url_password"),
        ("Authorization: Bearer abcdefghijklmnop1234", "abcdefghijklmnop1234", "bearer_token"),
        ("ghp_" + "a1" * 18, "ghp_" + "a1" * 18, "github_token"),
        ("AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP", "aws_access_key"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----", "MIIEow", "private_key"),
        ("eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "eyJhbGciOiJIUzI1", "jwt"),
        ("TOKEN: abcdef123456", "abcdef123456", "secret_label"),
        # Forms the old table missed (a local summary carried such a password six times).
        ("DB_PASS=hunter2 ./migrate", "hunter2", "secret_assignment"),
        ("mysql -uroot -pS3cret! shop", "S3cret!", "mysql_password"),
        ("login --password hunter2_x1 --user bob", "hunter2_x1", "secret_flag"),
        ("Authorization: Basic dXNlcjpTM2NyZXQh", "dXNlcjpTM2NyZXQh", "basic_auth"),
        ("Cookie: sid=31d4d96e407aad42", "31d4d96e407aad42", "cookie"),
        ("glpat-xY7_zW3-vU9tS2rQ1pO0", "xY7_zW3-vU9tS2rQ1pO0", "gitlab_token"),
        ("hf_AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOp", "huggingface_token"),
        ("npm_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7H8", "npm_token"),
    ],
)
def test_secret_values_are_replaced_by_a_marker_naming_the_kind(text: str, secret: str, kind: str) -> None:
    out = redact(text)
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_names_and_locations_survive() -> None:
    out = redact("export OPENAI_API_KEY=abc123def456ghi  # stored in ~/.config/keys.env")
    assert "OPENAI_API_KEY" in out and "~/.config/keys.env" in out
    assert secret_references(out) == ["OPENAI_API_KEY (secret_assignment)"]


def test_references_and_ids_are_not_secrets() -> None:
    for text in (
        '{"transaction_id": "tx_0042"}',
        "token_id=tok_12345678",
        "api_key_env=OPENAI_API_KEY",
        "password=$DB_PASSWORD",
        '"max_tokens": 4096',
        "input_tokens: 1234567",
        "author: someone-long",
        "mysql --password-file /run/secrets/db",
        "refund tx_7781 for mia_li_3668 to gift_card_6847880; flight HAT136, reservation EQ1G6C",
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


def test_the_fast_gate() -> None:
    assert not may_contain_secret("tests/test_x.py::case_1 PASSED\n3 passed in 0.2s")
    assert may_contain_secret("Authorization: BEARER x")


@given(
    st.text(alphabet=st.sampled_from(list("kKeEyYtToOnNsS-_:/@=xXaAiIzZgGhHpPbBrRcCdDlLwW 0123456789")), max_size=60)
)
def test_text_without_a_gate_word_is_never_changed(text: str) -> None:
    if not may_contain_secret(text):
        assert redact(text) == text


def test_scrub_replaces_lone_surrogates_only() -> None:
    assert replace_surrogates("a\ud800b") == "a\ufffdb"
    assert replace_surrogates("ok 😀") == "ok 😀"
    assert map_strings({"k\udfff": ["x\ud800"]}, replace_surrogates) == {"k\ufffd": ["x\ufffd"]}
