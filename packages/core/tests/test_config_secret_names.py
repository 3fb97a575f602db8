"""config.json names are checked with the one name rule: a literal under a name the secret table
would mask is refused, any other is accepted (the committed list of i-protocol's tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from i_core.errors import ConfigError
from i_core.settings import parse_api_config

NAMES_FILE = Path(__file__).resolve().parents[2] / "protocol" / "tests" / "fixtures" / "secret_names.json"
NAMES: list[dict[str, Any]] = json.loads(NAMES_FILE.read_text())["names"]
BASE = {"protocol": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "m"}
FIX = "put the key in an environment variable and name it in api_key_env"


@pytest.mark.parametrize("entry", NAMES, ids=[entry["name"] for entry in NAMES])
def test_a_literal_in_config_is_refused_exactly_under_a_secret_name(entry: dict[str, Any]) -> None:
    raw = {**BASE, "extra_body": {"options": {entry["name"]: "LITERAL-Zq8Rt5"}}}
    if not entry["secret"]:
        assert parse_api_config(raw, "cfg.json").extra_body == raw["extra_body"]
        return
    with pytest.raises(ConfigError) as caught:
        parse_api_config(raw, "cfg.json")
    message = str(caught.value)
    assert repr(f"extra_body.options.{entry['name']}") in message and FIX in message
    assert "LITERAL-Zq8Rt5" not in message
