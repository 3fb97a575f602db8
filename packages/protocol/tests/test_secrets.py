"""The one secret table: each pattern, its false positives, both policies, linear time."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_protocol import secrets
from i_protocol.secrets import DESCRIPTIONS, MARKER, contains_secret, find_secrets, may_contain_secret, redact

# Built from parts so that no scanner mistakes this file for a leak.
GITHUB = "gh" + "p_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
JWT = "ey" + "JhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
BASIC = "dXNlcjpTM2NyZXQh"  # base64 of "user:S3cret!"

# (text, pattern name, the secret value, what must stay around it)
FORMS = [
    (
        "-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
        "private_key",
        "MIIEpAIBAAKCAQEA",
        "",
    ),
    ("-----BEGIN " + "OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk (cut off)", "private_key", "b3BlbnNzaC1rZXk", ""),
    (f"session: {JWT}", "jwt", JWT, "session: "),
    ("key sk-" + "proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "sk_api_key", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z", "key "),
    ("sk-" + "ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", "sk_api_key", "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe", ""),
    (f"remote {GITHUB}", "github_token", GITHUB, "remote "),
    ("gh" + "o_" + "Zz9" * 12, "github_token", "Zz9" * 12, ""),
    ("github_" + "pat_" + "11ABCDEFG0" * 5, "github_token", "11ABCDEFG0" * 5, ""),
    ("gl" + "pat-" + "xY7_zW3-vU9tS2rQ1pO0", "gitlab_token", "xY7_zW3-vU9tS2rQ1pO0", ""),
    ("aws id AK" + "IAIOSFODNN7EXAMPLE", "aws_access_key", "IOSFODNN7EXAMPLE", "aws id "),
    ("xo" + "xb-123456789012-abcdefghijKLMN", "slack_token", "abcdefghijKLMN", ""),
    ("AI" + "zaSyA-1234567890abcdefghijklmnopqrstu", "google_api_key", "1234567890abcdefghijklmnopqrstu", ""),
    ("sk_" + "live_4eC39HqLyjWDarjtT1zdp7dc", "stripe_key", "4eC39HqLyjWDarjtT1zdp7dc", ""),
    ("hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz012345", "huggingface_token", "AbCdEfGhIjKlMnOpQrStUvWxYz012345", ""),
    ("npm_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "npm_token", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", ""),
    (f"Authorization: Basic {BASIC}", "basic_auth", BASIC, "Authorization: Basic "),
    ("Authorization: Bearer abcdefghijklmnop1234", "bearer_token", "abcdefghijklmnop1234", "Authorization: Bearer "),
    ("Authorization: Token 9f8e7d6c5b4a39281706", "bearer_token", "9f8e7d6c5b4a39281706", "Authorization: Token "),
    ("Authorization: Bearer\n  abcdefghijklmnopqrstu", "bearer_token", "abcdefghijklmnopqrstu", "Bearer\n  "),
    ("git clone https://bob:s3cr3tP4ss@example.com/r.git", "url_password", "s3cr3tP4ss", "https://bob:"),
    ("Cookie: sid=31d4d96e407aad42; theme=dark", "cookie", "sid=31d4d96e407aad42", "Cookie: "),
    ("Set-Cookie: sid=38afes7a8; Path=/; HttpOnly", "cookie", "38afes7a8", "Set-Cookie: "),
    ("mysql -uroot -pS3cret!", "mysql_password", "S3cret!", "mysql -uroot -p"),
    ("mysqldump -h db.internal -u app -p'p@ss w0rd' shop", "mysql_password", "p@ss w0rd", " shop"),
    # -p then a space prompts in mysql, but a value there is what the user meant as the password
    ("mysql -u root -p S3cretPw shop", "mysql_password", "S3cretPw", "mysql -u root -p "),
    ("docker login -u bob -p Dk8rHub2pw registry.example.com", "cli_password", "Dk8rHub2pw", "registry.example.com"),
    ("redis-cli -h cache -p 6379 -a R3disS3cret ping", "cli_password", "R3disS3cret", "-p 6379 -a "),
    ("sshpass -pSshp4ssw0rd ssh deploy@host", "cli_password", "Sshp4ssw0rd", "ssh deploy@host"),
    ("curl -u admin:Adm1nPass https://api.example.com/v1", "user_password", "Adm1nPass", "curl -u admin:"),
    ("curl --user=deploy:Tr4inC4r9 https://ci", "user_password", "Tr4inC4r9", "--user=deploy:"),
    ("AWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_key", "wJalrXUtnFEMI", ": "),
    ("machine api.example.com\n  login bob\n  password hunter2", "netrc_password", "hunter2", "login bob"),
    ("login --password hunter2_x1 --user bob", "secret_flag", "hunter2_x1", "--password "),
    ("login --password=hunter2_x1", "secret_flag", "hunter2_x1", "--password="),
    ("deploy --api-token 'abc 123'", "secret_flag", "abc 123", "--api-token '"),
    ("DB_PASS=hunter2 ./run", "secret_assignment", "hunter2", "DB_PASS="),
    ("PASSWORD=Tr0ub4dor&3", "secret_assignment", "Tr0ub4dor", "PASSWORD="),
    ("export OPENAI_API_KEY=abc123def456ghi", "secret_assignment", "abc123def456ghi", "export OPENAI_API_KEY="),
    ('DB_PASSWORD = "s3cr3t!"', "secret_assignment", "s3cr3t!", 'DB_PASSWORD = "'),
    ("client_secret='xyz'", "secret_assignment", "xyz", "client_secret='"),
    ("export MY_TOKEN_VALUE=abc_9f8e7d6c5b4a", "secret_assignment", "abc_9f8e7d6c5b4a", "MY_TOKEN_VALUE="),
    ("GET /v1/items?access_token=q8Zr2&page=2", "secret_assignment", "q8Zr2", "&page=2"),
    ("staging login\npassword: hunter2\n", "secret_label", "hunter2", "password: "),
    ("TOKEN: abcdef123456", "secret_label", "abcdef123456", "TOKEN: "),
    ('{"password": "hunter2hunter2", "user": "bob"}', "secret_label", "hunter2hunter2", '"user": "bob"'),
    ("X-API-Key: 5f0c2a9e and more", "secret_label", "5f0c2a9e", "X-API-Key: "),
    ("API key: zq8Rt5Lm", "secret_label", "zq8Rt5Lm", "API key: "),
    ("MYAPI_KEY=zq8Rt5Lm", "secret_assignment", "zq8Rt5Lm", "MYAPI_KEY="),
]


@pytest.mark.parametrize(("text", "name", "secret", "kept"), FORMS)
def test_each_form_is_found_and_only_its_value_is_redacted(text: str, name: str, secret: str, kept: str) -> None:
    assert contains_secret(text) == name
    assert [match.name for match in find_secrets(text)] == [name]
    out, count = redact(text)
    assert secret not in out and count == 1
    assert MARKER.format(name=name) in out
    assert kept in out


def test_every_pattern_has_a_form_and_a_description() -> None:
    assert {name for _, name, _, _ in FORMS} == set(DESCRIPTIONS)
    assert all(description.strip() for description in DESCRIPTIONS.values())


def test_the_public_api_is_pinned() -> None:
    assert sorted(secrets.__all__) == sorted(
        [
            "DESCRIPTIONS",
            "GATE_WORDS",
            "MARKER",
            "SecretMatch",
            "contains_secret",
            "find_secrets",
            "looks_like_credential",
            "may_contain_secret",
            "redact",
        ]
    )


@pytest.mark.parametrize("name", ["api_key", "OPENAI_API_KEY", "x-api-key", "github_token", "Client-Secret", "auth"])
def test_a_credential_looking_name_is_recognised(name: str) -> None:
    assert secrets.looks_like_credential(name)


@pytest.mark.parametrize("name", ["max_tokens", "tokenizer", "prompt_cache_key", "stop_token_ids", "api_key_env"])
def test_a_name_that_holds_something_else_is_not(name: str) -> None:
    assert not secrets.looks_like_credential(name)


def test_a_url_query_has_more_credential_names() -> None:
    assert secrets.looks_like_credential("X-Amz-Signature", query=True)
    assert not secrets.looks_like_credential("X-Amz-Signature")


def test_overlapping_finds_become_one_span_named_by_the_first_pattern() -> None:
    text = f"Authorization: Bearer {JWT}"
    assert redact(text) == ("Authorization: Bearer [REDACTED:jwt]", 1)
    text = f"GITHUB_TOKEN={GITHUB} and Cookie: sid=1; gh={GITHUB}"
    found = find_secrets(text)
    assert [match.name for match in found] == ["github_token", "github_token"]
    assert text[found[1].start :] == f"sid=1; gh={GITHUB}"  # the whole cookie value, not only the key


def test_ids_around_a_secret_stay() -> None:
    text = "refund tx_7781 of mia_li_3668 to gift_card_6847880 (HAT136, EQ1G6C); then password=hunter2"
    assert redact(text) == (text.replace("hunter2", "[REDACTED:secret_assignment]"), 1)


def test_a_custom_marker_and_idempotence() -> None:
    assert redact("DB_PASS=hunter2", marker="***") == ("DB_PASS=***", 1)
    for text in [form[0] for form in FORMS] + ["password://sk-passwordpassword0@"]:  # a marker holds a ':'
        once, _ = redact(text)
        assert redact(once) == (once, 0), once


NOT_SECRETS = [
    # paths, hashes, ids
    "/home/bob/.config/i/secrets/passwords.txt and ./src/token_store.py and ~/keys/id_ed25519.pub",
    "/nix/store/3x4fq9zg1m5y8c7vbl2w0kjhsd6rnp2a-python3-3.11.7/lib",
    "~/.cache/pip/wheels/7d/3b/Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z/pkg-1.0-py3-none-any.whl",
    '"integrity": "sha512-Zm9vYmFyYmF6cXV4eHl6enl4d3Z1dHNycXBvbm1sa2ppaGdmZWRjYmE0MjQy+/AbCd=="',
    "commit 3f9a2b7c4d1e8f0a9b2c3d4e5f6a7b8c9d0e1f2a and short 3f9a2b7",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "workspace id 550e8400-e29b-41d4-a716-446655440000",
    "mia_li_3668 tx_7781 HAT136 EQ1G6C gift_card_6847880 credit_card_4421486 certificate_7504069",
    # the word alone, in prose
    "Please reset your password; the password must have 8 characters.",
    "Passwords are hashed with bcrypt; tokens expire after 15 minutes.",
    "password: stored in the team vault under 'staging-db'",
    "Meeting at 12:30; token budget: 4000 tokens; the token verification_steps; the token src/v2/auth_1.py",
    "Send the header as Bearer $TOKEN, a Bearer authentication scheme, or use Basic authentication",
    "the Cookie: header carries the session",
    # a path given for a secret is not the secret (documented: --password-file PATH)
    "mysql --password-file /run/secrets/db --user app",
    "docker login --password-stdin --username bob",
    "mysql -u root -p < dump.sql; mysql -p -h db shop; mysql -u root -p",
    'redis-cli -a $REDIS_PASSWORD ping; curl -u bob https://example.com; curl -u "$USER:$TOKEN" https://x',
    "docker login -u bob --password-stdin registry.example.com",
    "password_file=/run/secrets/db_password",
    # names that hold something else, references, code
    "max_tokens=4096 and tokenizer=utf8_bytes; token_id=tok_12345678; next_page_token=CAESBggDEK",
    "api_key_env=OPENAI_API_KEY; API_KEY=env:OPENAI_API_KEY; password=${DB_PASSWORD}; password=$DB_PASSWORD",
    "API key: OPENAI_API_KEY",
    "postgres://admin:${PGPASSWORD}@db.internal/app and git@github.com:org/repo.git",
    "https://user@example.com/repo and https://example.com:8080/path",
    "password = os.environ['DB_PASSWORD']; token = get_token(); def f(password: str) -> None",
    '{"transaction_id": "tx_0042", "max_tokens": 4096, "input_tokens": 1234567, "password": null}',
    "FAILED tests/test_token_357.py::test_buffer_55 - AssertionError; see config/secret_store.py:12",
    "use token::Tokenizer::new(input) here",
    "-----BEGIN PUBLIC KEY----- and -----BEGIN CERTIFICATE----- are public",
    "use sk-learn, the task-runner and the ask-me-anything-thread-2024-v2 notes; sk-learn-compat-layer-v2",
    "eyJ is how base64 JSON starts; AKIA prefixes mark AWS key ids",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_text_is_not_a_secret(text: str) -> None:
    assert find_secrets(text) == []
    assert redact(text) == (text, 0)


@given(st.binary(min_size=4, max_size=32).map(bytes.hex))
def test_hex_digests_are_never_secrets(digest: str) -> None:
    assert find_secrets(f"commit {digest[:64]}") == []


@given(st.uuids().map(str))
def test_uuids_are_never_secrets(value: str) -> None:
    assert find_secrets(f"id {value}, {value}") == []


# Pieces of every pattern, so that generated texts come close to secrets from all sides.
FRAGMENTS = st.sampled_from(
    ["password", "pass", "pwd", "token", "key", "api_key", "--password", "-p", "mysql", "Bearer", "Basic", "Cookie:",
     "login", "://", "sk-", "ghp_", "=", ":", " ", '"', "'", "\\", ",", "}", "\n", "$X", "hunter2",
     "a1B2c3D4e5F6g7H8i9J0", "dXNlcjpwYXNz"]
)  # fmt: skip
CHARACTERS = st.text(alphabet=st.sampled_from(list("kKeEyYtTsSpPaAwWdD-_:/@=xXiIzZhHbB 0123456789\"'\\.\n\t$,;{}()")))


@given(st.lists(st.one_of(FRAGMENTS, CHARACTERS), max_size=20).map("".join))
def test_the_gate_and_both_policies_agree(text: str) -> None:
    found = find_secrets(text)
    assert (contains_secret(text) is None) == (found == [])
    assert may_contain_secret(text) == any(word in text.lower() for word in secrets.GATE_WORDS)
    if not may_contain_secret(text):
        assert found == []
    out, count = redact(text)
    assert count == len(found) and redact(out) == (out, 0)


@given(st.text(max_size=40))
def test_redaction_keeps_json_valid(value: str) -> None:
    for name in ("password", "api_key", "Cookie", "cmd"):
        inner = json.dumps({name: value, "mysql": f"mysql -p{value}", "flag": f"--token {value}"})
        for document in (inner, json.dumps(inner)):
            out, _ = redact(document)
            json.loads(out)


def test_adversarial_megabyte_inputs_are_scanned() -> None:
    # Runs of each pattern's prefix with nothing that ends a match: quadratic backtracking would
    # take minutes here, a linear scan well under a second each.
    size = 1 << 20
    for seed in (
        "sk-", "ghp_", "github_pat_", "glpat-", "xoxb-", "AIza", "eyJaaaaaaaa.", "Bearer ", "Basic QUFB", "a://b:",
        "cookie: a=", "mysql -x ", "login a password ", "--password-", "key=", "token_id=", "the password: ",
        "a=" + "b" * 300, "-----BEGIN ",
    ):  # fmt: skip
        text = (seed * (size // len(seed) + 1))[:size]
        out, count = redact(text)
        assert out.count("[REDACTED:") == count
    many = "DB_PASS=hunter2\n" * (size // 16)
    assert redact(many) == ("DB_PASS=[REDACTED:secret_assignment]\n" * (size // 16), size // 16)


def _tau_bench() -> Path | None:
    configured = os.environ.get("I_TEST_TAU_BENCH")
    folder = (
        Path(configured)
        if configured
        else Path(__file__).resolve().parents[3] / ".." / "shared" / "corpora" / "tau-bench"
    )
    corpus = folder / "gpt-4o-airline.json"
    return corpus if corpus.is_file() else None


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for item in value.values() for s in _strings(item)]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def test_tau_bench_ground_truth_arguments_are_never_secrets() -> None:
    corpus = _tau_bench()
    if corpus is None:
        pytest.skip("tau-bench corpus not found (set I_TEST_TAU_BENCH to its folder)")
    tasks = json.loads(corpus.read_text(encoding="utf-8"))
    values = [
        value for task in tasks for action in task["info"]["task"]["actions"] for value in _strings(action["kwargs"])
    ]
    assert len(values) > 1000  # the real corpus: user ids, reservation ids, flights, payment ids
    for value in values:
        assert find_secrets(value) == [], value
        assert redact(value) == (value, 0)
    for task in tasks:  # and whole conversations, as the compactor sees them
        for action in task["info"]["task"]["actions"]:
            rendered = json.dumps(action["kwargs"])
            assert redact(rendered) == (rendered, 0)
        assert find_secrets(json.dumps(task["traj"])) == []
