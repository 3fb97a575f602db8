"""Credential-looking keys and values are refused (the REFUSE policy of i_protocol.secrets); ordinary
text is not. Each form the old i_memory.credentials table caught keeps its case here."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_harness import Env, tool, tool_error

from i_memory.entry import refuse_credentials
from i_memory.errors import MemoryStoreError
from i_protocol.host import WorkerProcess

# Built from parts so that no scanner mistakes this test file for a leak.
SK_OPENAI = "sk-" + "proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
SK_DEEPSEEK = "sk-" + "3f9a2b7c4d1e8f0a9b2c3d4e5f6a7b8c"
SK_ANTHROPIC = "sk-" + "ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe"
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
AWS = "AK" + "IA" + "IOSFODNN7EXAMPLE"
SLACK = "xo" + "xb-" + "123456789012-abcdefghijKLMN"
JWT = "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
PEM = "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----"

CREDENTIALS = [
    pytest.param(f"the key is {SK_OPENAI}", "'sk-' format", id="openai"),
    pytest.param(SK_DEEPSEEK, "'sk-' format", id="deepseek"),
    pytest.param(SK_ANTHROPIC, "'sk-' format", id="anthropic"),
    pytest.param(f"token {GITHUB} for CI", "GitHub token", id="github"),
    pytest.param("github_" + "pat_" + "11ABCDEFG0" * 5, "GitHub token", id="github-pat"),
    pytest.param(f"aws id {AWS}", "AWS access key", id="aws"),
    pytest.param(SLACK, "Slack token", id="slack"),
    pytest.param(f"session: {JWT}", "JSON Web Token", id="jwt"),
    pytest.param(PEM, "private key block", id="pem-rsa"),
    pytest.param("-----BEGIN " + "OPENSSH PRIVATE KEY-----", "private key block", id="pem-openssh"),
    pytest.param("-----BEGIN " + "PRIVATE KEY-----", "private key block", id="pem-pkcs8"),
    pytest.param("db is postgres://admin:hunter2@db.internal:5432/app", "password inside a URL", id="url"),
    pytest.param("password=hunter2", "assigned", id="password-assign"),
    pytest.param('DB_PASSWORD = "s3cr3t!"', "assigned", id="env-assign"),
    pytest.param("GITHUB_TOKEN=abc123", "assigned", id="token-assign"),
    pytest.param("client_secret='xyz'", "assigned", id="client-secret"),
    pytest.param("staging login\npassword: hunter2\n", "labelled", id="password-label"),
    pytest.param("Authorization: Bearer abcdefghijklmnopqrstuvwxyz012345", "bearer", id="bearer"),
    pytest.param("AI" + "za" + "SyA-1234567890abcdefghijklmnopqrstu", "Google API key", id="google"),
    pytest.param("sk_" + "live_" + "4eC39HqLyjWDarjtT1zdp7dc", "Stripe", id="stripe"),
]

# Forms the old table missed: memory stored them and re-injected them every turn.
CREDENTIALS += [
    pytest.param("DB_PASS=hunter2", "assigned", id="db-pass"),
    pytest.param("mysql -uroot -pS3cret!", "MySQL password", id="mysql-p"),
    pytest.param("login --password hunter2_x1", "--password", id="password-flag"),
    pytest.param("Authorization: Basic dXNlcjpTM2NyZXQh", "HTTP Basic", id="basic"),
    pytest.param("Cookie: sid=31d4d96e407aad42", "cookie", id="cookie"),
    pytest.param("gl" + "pat-" + "xY7_zW3-vU9tS2rQ1pO0", "GitLab token", id="gitlab"),
]

ORDINARY = [
    "The build uses make -j4; run the tests with pytest -q.",
    "commit 3f9a2b7c4d1e8f0a9b2c3d4e5f6a7b8c9d0e1f2a fixed the flaky test",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "workspace id 550e8400-e29b-41d4-a716-446655440000",
    "max_tokens=4096 and tokenizer=utf8_bytes in config.json",
    "api_key_env=OPENAI_API_KEY (the key itself lives in the environment)",
    "password=${DB_PASSWORD}",
    "password: stored in the team vault under 'staging-db'",
    "API key: OPENAI_API_KEY",
    "API_KEY=env:OPENAI_API_KEY",
    "password_file=/run/secrets/db_password",
    "postgres://admin:${PGPASSWORD}@db.internal/app",
    "https://user@example.com/repo and https://example.com:8080/path",
    "git@github.com:org/repo.git",
    "-----BEGIN PUBLIC KEY----- and -----BEGIN CERTIFICATE----- are public",
    "use sk-learn, the task-runner and the ask-me-anything-thread-2024-v2 notes",
    "Passwords are hashed with bcrypt; tokens expire after 15 minutes.",
    "Meeting at 12:30; token budget: 4000 tokens",
    "Send the header as Bearer $TOKEN, a Bearer authentication scheme",
    "\u5bc6\u7801\u4fdd\u5b58\u5728\u73af\u5883\u53d8\u91cf DB_PASSWORD \u4e2d",
    "eyJ is how base64 JSON starts",
    "AKIA prefixes mark AWS key ids",
    "mysql --password-file /run/secrets/db (a path, not a secret)",
    "reset your password in the admin panel",
    "user mia_li_3668 booked HAT136 on reservation EQ1G6C with gift_card_6847880",
]


def refused(text: str) -> str | None:
    """The refusal message for ``text`` as a value, or None when it would be stored."""
    try:
        refuse_credentials("memory_set", "value", text)
    except MemoryStoreError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize(("text", "kind"), CREDENTIALS)
def test_credentials_are_recognised(text: str, kind: str) -> None:
    message = refused(text)
    assert message is not None and kind in message
    assert text not in message


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_text_is_not_a_credential(text: str) -> None:
    assert refused(text) is None


@given(st.binary(min_size=20, max_size=32).map(bytes.hex))
def test_hex_digests_are_never_credentials(digest: str) -> None:
    assert refused(f"commit {digest}") is None
    assert refused(digest) is None


@given(st.uuids().map(str))
def test_uuids_are_never_credentials(value: str) -> None:
    assert refused(value) is None


@given(
    st.lists(
        st.sampled_from(
            ["the", "build", "test", "uses", "make", "and", "runs", "fast", "on", "ci", "with", "cache", "keys"]
        ),
        max_size=30,
    )
)
def test_prose_is_never_a_credential(words: list[str]) -> None:
    assert refused(" ".join(words)) is None


def test_set_refuses_a_secret_value_with_advice_and_without_echoing_it(env: Env, worker: WorkerProcess) -> None:
    error = tool_error(worker, env, "memory_set", key="openai", value=f"use {SK_OPENAI}")
    assert "refused" in error and "'sk-' format" in error
    assert "environment variable" in error and "path of the file" in error
    assert SK_OPENAI not in error and SK_OPENAI[5:] not in error
    assert not env.memory_file.exists()


def test_set_refuses_a_secret_key(env: Env, worker: WorkerProcess) -> None:
    error = tool_error(worker, env, "memory_set", key=GITHUB, value="ci token")
    assert "the key looks like it contains a GitHub token" in error
    assert not env.memory_file.exists()


def test_a_reference_is_stored(env: Env, worker: WorkerProcess) -> None:
    value = "OpenAI key: in env OPENAI_API_KEY; DB password file /run/secrets/db"
    assert tool(worker, env, "memory_set", key="credentials.where", value=value).startswith("created")
    assert tool(worker, env, "memory_get", key="credentials.where") == value
