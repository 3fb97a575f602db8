"""The module config ``config_dir/memory.json`` (not the workspace state file of the same name)."""

from __future__ import annotations

import pytest
from memory_harness import Env, tool, tool_error

from i_memory import Limits, MemorySettings, MemoryStoreError, parse_settings


def test_defaults() -> None:
    assert parse_settings({}) == MemorySettings(
        enabled=True,
        inject=True,
        limits=Limits(max_entries=256, max_key_chars=128, max_value_chars=8000, max_total_bytes=65536),
    )


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({"enable": True}, "unknown field(s) enable; known fields: enabled, inject, max_entries"),
        ({"enabled": "yes"}, 'enabled must be true or false, got "yes"'),
        ({"inject": 1}, "inject must be true or false, got 1"),
        ({"max_entries": 0}, "max_entries must be an integer from 1 to 10000, got 0"),
        ({"max_entries": 10001}, "from 1 to 10000"),
        ({"max_key_chars": True}, "max_key_chars must be an integer from 1 to 1024, got true"),
        ({"max_value_chars": 2.5}, "max_value_chars must be an integer from 1 to 1000000, got 2.5"),
        ({"max_total_bytes": 4 * 1024 * 1024 + 1}, "max_total_bytes must be an integer from 1 to 4194304"),
    ],
)
def test_invalid_config_is_refused_by_name(config: dict, expected: str) -> None:
    with pytest.raises(MemoryStoreError, match=r"^memory\.json: ") as raised:
        parse_settings(config)
    assert expected in str(raised.value)


def test_invalid_config_file_fails_the_call_naming_the_file(env: Env) -> None:
    env.write_config({"max_entries": -1})
    worker = env.spawn()
    error = tool_error(worker, env, "memory_list")
    assert str(env.config_file) in error and "max_entries must be an integer" in error


def test_explicit_config_argument_wins(env: Env) -> None:
    env.write_config({"enabled": False})
    explicit = env.root / "explicit.json"
    explicit.write_text('{"max_entries": 1}')
    worker = env.spawn("--config", str(explicit))
    tool(worker, env, "memory_set", key="a", value="1")
    assert "memory is full (1 of 1 entries)" in tool_error(worker, env, "memory_set", key="b", value="2")


def test_limits_from_config_apply(env: Env) -> None:
    env.write_config({"max_entries": 2, "max_key_chars": 5, "max_value_chars": 10, "max_total_bytes": 24})
    worker = env.spawn()
    assert "6 characters; the limit is 5" in tool_error(worker, env, "memory_set", key="k" * 6, value="v")
    assert "11 characters; the limit is 10" in tool_error(worker, env, "memory_set", key="k", value="v" * 11)
    tool(worker, env, "memory_set", key="a", value="0123456789")  # 11 bytes
    tool(worker, env, "memory_set", key="b", value="0123456789")  # 22 bytes
    assert "memory is full (2 of 2 entries)" in tool_error(worker, env, "memory_set", key="c", value="x")
    tool(worker, env, "memory_delete", key="b")
    # 11 + 1 + 10 chars of two-byte characters = 32 bytes > 24
    error = tool_error(worker, env, "memory_set", key="c", value="\u00e9" * 10)
    assert "over its 24-byte limit" in error and "now 11 bytes" in error
    assert tool(worker, env, "memory_set", key="a", value="short").startswith("updated")  # replacing is fine


def test_lowered_limit_still_allows_shrinking_and_deleting(env: Env) -> None:
    worker = env.spawn()
    tool(worker, env, "memory_set", key="a", value="x" * 100)
    tool(worker, env, "memory_set", key="b", value="y" * 100)
    env.write_config({"max_total_bytes": 50, "max_entries": 1})
    assert "over its 50-byte limit" in tool_error(worker, env, "memory_set", key="a", value="x" * 101)
    assert tool(worker, env, "memory_set", key="a", value="x" * 10).startswith("updated")
    assert tool(worker, env, "memory_get", key="b") == "y" * 100  # reads are never blocked by limits
    assert tool(worker, env, "memory_delete", key="b").startswith("deleted")
