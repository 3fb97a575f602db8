"""Optional: the same task against a real OpenAI-compatible server named by the environment.

Set I_TEST_OPENAI_BASE_URL (e.g. http://127.0.0.1:8080/v1), I_TEST_OPENAI_MODEL, and
I_TEST_OPENAI_KEY_ENV (the NAME of the variable that holds the key, if the server needs one).
Skipped otherwise: no test needs the internet or a paid model.
"""

from __future__ import annotations

import os

import pytest

from i_protocol.testing import scaled

pytestmark = pytest.mark.optional


@pytest.mark.skipif(not os.environ.get("I_TEST_OPENAI_BASE_URL"), reason="I_TEST_OPENAI_BASE_URL is not set")
def test_read_and_summarise_against_a_real_server(i, write_config, project):
    write_config(
        os.environ["I_TEST_OPENAI_BASE_URL"],
        model=os.environ.get("I_TEST_OPENAI_MODEL", "gpt-4o-mini"),
        api_key_env=os.environ.get("I_TEST_OPENAI_KEY_ENV"),
        retries=2,
        timeout=scaled(120),
    )
    result = i("-C", str(project), "read README.md and summarise it in one sentence")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip()
    assert "read" in result.stderr  # the summary line lists the tools used
