"""mcp.json validation: the mcpServers shape, our secret rule, env files read for one server only."""

from __future__ import annotations

import pytest

from i_mcp.errors import McpConfigError
from i_mcp.settings import DEFAULT_TIMEOUT_S, EnvFile, parse_servers, server_env

GITHUB_TOKEN = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"


def servers(entries, base_dir=None):
    return parse_servers({"mcpServers": entries}, "mcp.json", base_dir)


def test_the_claude_desktop_shape_is_read_with_defaults():
    (spec,) = servers({"files": {"command": "npx", "args": ["-y", "server"], "env": {"LOG_LEVEL": "debug"}}})
    assert (spec.name, spec.command, spec.args) == ("files", "npx", ("-y", "server"))
    assert spec.env == (("LOG_LEVEL", "debug"),) and spec.timeout == DEFAULT_TIMEOUT_S and spec.cwd is None
    assert parse_servers({}, "mcp.json", None) == ()


@pytest.mark.parametrize(
    "data, message",
    [
        ({"servers": {}}, "mcp.json: unknown field(s) servers; known fields: mcpServers"),
        ({"mcpServers": []}, "mcp.json: mcpServers must be an object"),
        ({"mcpServers": {"s": "npx"}}, "mcp.json: mcpServers.s must be an object"),
        ({"mcpServers": {"s": {"args": []}}}, "mcp.json: mcpServers.s.command must be"),
        ({"mcpServers": {"s": {"command": "x", "args": "a b"}}}, "mcp.json: mcpServers.s.args must be an array"),
        ({"mcpServers": {"s": {"command": "x", "url": "http://h"}}}, "mcp.json: mcpServers.s: unknown field(s) url"),
        ({"mcpServers": {"s": {"command": "x", "type": "sse"}}}, "only stdio servers are supported"),
        ({"mcpServers": {"s": {"command": "x", "timeout": 601}}}, "mcp.json: mcpServers.s.timeout must be"),
        ({"mcpServers": {"s": {"command": "x", "env": {"N": 3}}}}, 'mcpServers.s.env.N must be a string or {"file"'),
        ({"mcpServers": {"s": {"command": "x", "env": {"N": {"path": "f"}}}}}, "unknown field(s) path"),
    ],
)
def test_a_bad_field_is_an_error_naming_the_file_and_the_field(data, message):
    with pytest.raises(McpConfigError) as info:
        parse_servers(data, "mcp.json", None)
    assert message in str(info.value)


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "OPENAI_API_KEY", "DB_PASSWORD", "client-secret", "apikey"])
def test_a_literal_under_a_secret_looking_name_is_refused_without_echoing_it(name):
    with pytest.raises(McpConfigError) as info:
        servers({"gh": {"command": "x", "env": {name: "plain-looking-value"}}})
    message = str(info.value)
    assert f"mcp.json: mcpServers.gh.env.{name}: a literal value under a secret-looking name" in message
    assert '{"file": PATH}' in message and "plain-looking-value" not in message


def test_a_literal_that_holds_a_secret_by_its_form_is_refused_in_env_and_args():
    with pytest.raises(McpConfigError, match=r"mcpServers\.gh\.env\.GITHUB_HOST holds what looks like a secret"):
        servers({"gh": {"command": "x", "env": {"GITHUB_HOST": GITHUB_TOKEN}}})
    with pytest.raises(McpConfigError, match=r"mcpServers\.gh\.args\[1\] holds what looks like a secret") as info:
        servers({"gh": {"command": "x", "args": ["--token", GITHUB_TOKEN]}})
    assert GITHUB_TOKEN not in str(info.value)


def test_non_secret_names_and_values_pass():
    (spec,) = servers({"s": {"command": "x", "env": {"MAX_TOKENS": "100", "TOKENIZER": "cl100k", "HOST": "h"}}})
    assert dict(spec.env) == {"MAX_TOKENS": "100", "TOKENIZER": "cl100k", "HOST": "h"}


def test_an_env_file_resolves_against_the_config_folder_and_is_read_when_the_server_starts(tmp_path):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "gh").write_text(GITHUB_TOKEN + "\n")
    (spec,) = servers({"gh": {"command": "x", "env": {"GITHUB_TOKEN": {"file": "secrets/gh"}}}}, str(tmp_path))
    assert spec.env == (("GITHUB_TOKEN", EnvFile(str(tmp_path / "secrets" / "gh"))),)
    assert server_env(spec) == {"GITHUB_TOKEN": GITHUB_TOKEN}  # one trailing newline dropped


def test_a_missing_env_file_names_the_server_and_the_variable(tmp_path):
    (spec,) = servers({"gh": {"command": "x", "env": {"GITHUB_TOKEN": {"file": "nope"}}}}, str(tmp_path))
    with pytest.raises(McpConfigError, match=r"^mcp.json: mcpServers\.gh\.env\.GITHUB_TOKEN: cannot read .*nope"):
        server_env(spec)


def test_a_relative_cwd_resolves_against_the_config_folder(tmp_path):
    (spec,) = servers({"s": {"command": "x", "cwd": "work"}}, str(tmp_path))
    assert spec.cwd == str(tmp_path / "work")
