"""mcp.json env names are checked with the one name rule: a literal under a name the secret table
would mask is refused with the fix ({"file": PATH}); any other name passes (the committed list
of i-protocol's tests)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from i_mcp.errors import McpConfigError
from i_mcp.settings import parse_servers

NAMES_FILE = Path(__file__).resolve().parents[2] / "protocol" / "tests" / "fixtures" / "secret_names.json"
NAMES: list[dict[str, Any]] = json.loads(NAMES_FILE.read_text())["names"]


@pytest.mark.parametrize("entry", NAMES, ids=[entry["name"] for entry in NAMES])
def test_a_literal_env_value_is_refused_exactly_under_a_secret_name(entry: dict[str, Any]) -> None:
    name = entry["name"]
    data = {"mcpServers": {"s": {"command": "x", "env": {name: "plain-looking-value"}}}}
    if not entry["secret"]:
        (spec,) = parse_servers(data, "mcp.json", None)
        assert dict(spec.env) == {name: "plain-looking-value"}
        return
    with pytest.raises(McpConfigError) as info:
        parse_servers(data, "mcp.json", None)
    message = str(info.value)
    assert f"mcp.json: mcpServers.s.env.{name}: a literal value under a secret-looking name" in message
    assert '{"file": PATH}' in message and "plain-looking-value" not in message
