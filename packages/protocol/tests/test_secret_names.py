"""The one name rule: every check of a name gives one verdict (fixtures/secret_names.json).

The rule (``i_protocol.credentials``) is asked directly, the way config.json and mcp.json names
are checked, and through the secret table's three name patterns (``NAME=value``,
``"NAME": "value"``, ``--name value``), which must mask a value exactly when the name holds a
secret.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from i_protocol import credentials, secrets
from i_protocol.secrets import redact

NAMES: list[dict[str, Any]] = json.loads((Path(__file__).parent / "fixtures" / "secret_names.json").read_text())[
    "names"
]
VALUE = "Zq8Rt5Lm2Xy9"  # random-looking, so that only the name decides


def test_the_list_is_long_enough_and_holds_the_names_that_disagreed() -> None:
    names = {entry["name"] for entry in NAMES}
    assert len(names) == len(NAMES) >= 28
    assert {"SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "DB_PASS", "pwd", "access_key", "API_TOKEN"} <= names
    assert {"api_key_env", "max_tokens", "token_budget", "password_file"} <= names
    assert sum(entry["secret"] for entry in NAMES) >= 14 and sum(not entry["secret"] for entry in NAMES) >= 14


def test_the_table_reexports_the_one_rule() -> None:
    assert secrets.looks_like_credential is credentials.looks_like_credential


@pytest.mark.parametrize("entry", NAMES, ids=[entry["name"] for entry in NAMES])
def test_every_check_of_a_name_gives_its_verdict(entry: dict[str, Any]) -> None:
    name, expected = entry["name"], entry["secret"]
    flag = "--" + name.lower().replace("_", "-")
    verdicts = {
        "looks_like_credential": credentials.looks_like_credential(name),
        "NAME=value": VALUE not in redact(f"{name}={VALUE}")[0],
        '"NAME": "value"': VALUE not in redact(json.dumps({name: VALUE}))[0],
        "--name value": VALUE not in redact(f"run {flag} {VALUE}")[0],
    }
    assert verdicts == dict.fromkeys(verdicts, expected), entry["why"]


@pytest.mark.parametrize("name", ["key", "sig", "signature", "X-Amz-Signature", "code"])
def test_a_url_query_has_a_few_more_secret_names(name: str) -> None:
    assert credentials.looks_like_credential(name, query=True)
    assert not credentials.looks_like_credential(name)


def test_checking_names_compiles_no_pattern() -> None:
    # config.json is checked before any worker starts: the name rule must not pay for the table.
    code = (
        "import sys; from i_protocol.credentials import looks_like_credential as f; f('DB_PASS'); "
        "print(sorted(m for m in sys.modules if m in ('re', 'i_protocol.secrets')))"
    )
    shown = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, check=True).stdout
    assert "i_protocol.secrets" not in shown
    assert "import re" not in Path(credentials.__file__).read_text()
