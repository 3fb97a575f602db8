"""The on-disk tool lists: keyed by the entry's digest, derived data that is listed again when unreadable."""

from __future__ import annotations

from i_mcp.cache import cache_file, load_tools, store_tools
from i_mcp.settings import parse_servers

TOOLS = [{"name": "echo", "description": "Echo.", "input_schema": {"type": "object"}}]


def test_a_stored_list_comes_back(tmp_path):
    store_tools(str(tmp_path), "abc", "srv", TOOLS)
    assert load_tools(str(tmp_path), "abc") == TOOLS
    assert load_tools(str(tmp_path), "other") is None


def test_an_unreadable_or_malformed_cache_file_is_no_cache(tmp_path):
    path = cache_file(str(tmp_path), "abc")
    path.parent.mkdir(parents=True)
    for content in (b"{not json", b'{"tools": [{"name": 1}]}', b"[]"):
        path.write_bytes(content)
        assert load_tools(str(tmp_path), "abc") is None


def test_editing_an_entry_changes_its_key_and_other_entries_keep_theirs():
    def digests(servers):
        return {spec.name: spec.digest for spec in parse_servers({"mcpServers": servers}, "mcp.json", None)}

    before = digests({"a": {"command": "x", "args": ["1"]}, "b": {"command": "y"}})
    after = digests({"a": {"command": "x", "args": ["2"]}, "b": {"command": "y"}})
    assert before["a"] != after["a"] and before["b"] == after["b"]
    # The same entry under another server name is another server.
    assert digests({"c": {"command": "y"}})["c"] != before["b"]
