"""What the real `i` process prints, through the scripted model: a failure on stderr (and in
``--json``) never echoes the configured API key or what the secret table flags, and never obeys a
control sequence; an answer on a piped stdout and in ``--json`` stays exactly what the model sent."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_scripted import ScriptedModel

KEY = "opaque-Zq81hTbv0pLwY7c3"  # no known prefix: only the configured value says it is the key
FLAGGED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"  # a GitHub token: the secret table flags it
HOSTILE_ANSWER = "Done.\x1b]0;PWNED\x07\x1b]2;PWNED2\x1b\\ \x1b[2K\r\x9b2J\u202eevil \u0645\u0631\u062d\u0628\u0627"


@pytest.fixture
def env(dirs: dict[str, Path]) -> dict[str, str]:
    value = dict(os.environ)
    value.update({f"I_{key.upper()}_DIR": str(path) for key, path in dirs.items()})
    value["TEST_MODEL_KEY"] = KEY
    value.pop("I_DEBUG", None)
    return value


def run(
    env: dict[str, str], dirs: dict[str, Path], project: Path, base_url: str, *args: str, **config: object
) -> subprocess.CompletedProcess[bytes]:
    settings = {
        "protocol": "openai",
        "base_url": base_url,
        "model": "scripted-1",
        "api_key_env": "TEST_MODEL_KEY",
        "retries": 0,
        "timeout": 20,
        **config,
    }
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(settings))
    command = [sys.executable, "-m", "i_core", "-C", str(project), *args]
    return subprocess.run(command, env=env, capture_output=True, timeout=120)


UNAUTHORIZED = {"status": 401, "error_message": f"Incorrect API key provided: {KEY}. Token {FLAGGED} revoked."}


def test_a_401_body_quoting_the_key_is_scrubbed_on_stderr(env, dirs, project):
    with ScriptedModel([UNAUTHORIZED]) as model:
        result = run(env, dirs, project, model.base_url, "hello")
    assert result.returncode == 4
    stderr = result.stderr.decode()
    assert "HTTP 401" in stderr and "[REDACTED:TEST_MODEL_KEY]" in stderr
    assert KEY not in stderr and FLAGGED not in stderr


def test_a_401_body_quoting_the_key_is_scrubbed_in_json(env, dirs, project):
    with ScriptedModel([UNAUTHORIZED]) as model:
        result = run(env, dirs, project, model.base_url, "--json", "hello")
    report = orjson.loads(result.stdout)
    assert report["exit"] == 4 and "HTTP 401" in report["error"]
    assert KEY not in result.stdout.decode() and FLAGGED not in result.stdout.decode()
    assert KEY not in result.stderr.decode()


def test_the_debug_traceback_is_scrubbed(env, dirs, project):
    with ScriptedModel([UNAUTHORIZED]) as model:
        result = run({**env, "I_DEBUG": "1"}, dirs, project, model.base_url, "hello")
    stderr = result.stderr.decode()
    assert "Traceback (most recent call last)" in stderr and "TransportError" in stderr
    assert KEY not in stderr and FLAGGED not in stderr


def test_a_server_error_holding_escapes_is_shown_escaped(env, dirs, project):
    step = {"status": 400, "error_message": "bad request\x1b]0;PWNED\x07\r\x1b[2Kall fine"}
    with ScriptedModel([step]) as model:
        result = run(env, dirs, project, model.base_url, "hello")
    stderr = result.stderr.decode()
    assert "bad request\\x1b]0;PWNED\\x07\u240d\\x1b[2Kall fine" in stderr
    assert "\x1b" not in stderr and "\r" not in stderr


@pytest.mark.parametrize("stream", [False, True])
def test_a_piped_answer_is_byte_identical_to_what_the_model_sent(env, dirs, project, stream):
    with ScriptedModel([{"text": HOSTILE_ANSWER}]) as model:
        result = run(env, dirs, project, model.base_url, "--quiet", "hello", stream=stream)
    assert result.returncode == 0, result.stderr
    assert result.stdout == HOSTILE_ANSWER.encode() + b"\n"  # the console's final newline, nothing else


@pytest.mark.parametrize("stream", [False, True])
def test_json_keeps_the_answer_exact(env, dirs, project, stream):
    with ScriptedModel([{"text": HOSTILE_ANSWER}]) as model:
        result = run(env, dirs, project, model.base_url, "--json", "hello", stream=stream)
    assert result.returncode == 0, result.stderr
    assert orjson.loads(result.stdout)["answer"] == HOSTILE_ANSWER


def test_the_redactor_scrubs_the_configured_value_and_what_the_table_flags():
    from i_core.redaction import Redactor

    redactor = Redactor()
    redactor.add("TEST_MODEL_KEY", KEY)
    redactor.add("SHORT_KEY", "abc")  # too short to look for: it would mangle every message
    text = redactor.scrub(f"key {KEY}, token {FLAGGED}, abc stays")
    # The table's pattern names are its own (i_protocol.secrets): only that one replaced the token.
    assert text.startswith("key [REDACTED:TEST_MODEL_KEY], token [REDACTED:") and text.endswith("], abc stays")
    assert FLAGGED not in text
