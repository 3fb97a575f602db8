"""mcp.json validation: the mcpServers shape, our secret rule, env files read for one server only."""

from __future__ import annotations

import os

import pytest

from i_mcp.errors import McpConfigError
from i_mcp.settings import DEFAULT_TIMEOUT_S, EnvFile, parse_config, parse_servers, server_env, server_headers

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
        ({"mcpServers": {"s": {"command": "x", "type": "sse"}}}, "the older SSE transport is not supported"),
        ({"mcpServers": {"s": {"url": "https://h/mcp", "args": []}}}, "mcp.json: mcpServers.s: unknown field(s) args"),
        ({"mcpServers": {"s": {"url": "ftp://h/mcp"}}}, "mcpServers.s.url must be an http or https URL"),
        ({"mcpServers": {"s": {"url": "https://u:p@h/mcp"}}}, "mcpServers.s.url: credentials in the URL"),
        ({"mcpServers": {"s": {"url": "https://h/mcp?api_key=1"}}}, "query parameter 'api_key' looks like a cred"),
        ({"mcpServers": {"s": {"url": "http://h/mcp"}}}, "mcpServers.s.url: plain http is only for a server"),
        ({"mcpServers": {"s": {"url": "https://h", "allow_private": 1}}}, "s.allow_private must be true or false"),
        ({"mcpServers": {"s": {"url": "https://h", "bearer_token": "abc"}}}, 's.bearer_token must be {"file": PATH}'),
        ({"mcpServers": {"s": {"url": "https://h", "headers": {"X-Api-Key": "abc"}}}}, "headers.X-Api-Key: a literal"),
        ({"mcpServers": {"s": {"url": "https://h", "headers": {"Host": "x"}}}}, "headers.Host: i-mcp sets this"),
        ({"mcpServers": {"s": {"url": "https://h", "headers": {"A B": "x"}}}}, "headers.A B: not a valid header"),
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


def test_a_remote_server_entry_in_the_shapes_claude_code_and_cursor_write(tmp_path):
    (token := tmp_path / "token").write_text("abc-123\n")
    typed, bare = servers(
        {
            "typed": {"type": "http", "url": "https://mcp.example.com/mcp", "bearer_token": {"file": "token"}},
            "bare": {"url": "http://10.0.0.5:8080/mcp", "headers": {"X-Home": "${HOME}"}, "allow_private": True},
        },
        str(tmp_path),
    )
    assert typed.url == "https://mcp.example.com/mcp"
    assert typed.headers == (("Authorization", EnvFile(str(token), "Bearer ")),) and not typed.allow_private
    assert server_headers(typed) == {"Authorization": "Bearer abc-123"}
    assert (bare.url, bare.allow_private) == ("http://10.0.0.5:8080/mcp", True)
    assert server_headers(bare) == {"X-Home": os.environ["HOME"]}


def test_only_the_user_s_file_may_trust_a_private_address():
    entry = {"s": {"url": "http://127.0.0.1:9/mcp", "allow_private": True}}
    parsed = parse_config({"mcpServers": entry}, "/work/app/.mcp.json", None, trusted=False)
    (broken,) = parsed.broken
    assert "/work/app/.mcp.json: mcpServers.s.allow_private: a project's .mcp.json cannot trust" in str(broken.error)
