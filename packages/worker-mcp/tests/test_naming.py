"""Model-facing names: mcp__NAME__TOOL as is when valid, else shortened with a digest suffix."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from i_mcp.naming import TOOL_NAME, exposed_name


def test_a_valid_name_is_used_as_it_is():
    assert exposed_name("github", "create_issue") == "mcp__github__create_issue"
    assert exposed_name("a-b", "c-d") == "mcp__a-b__c-d"


def test_invalid_characters_become_underscores_and_a_digest_keeps_names_apart():
    dotted = exposed_name("docs", "search.pages")
    underscored = exposed_name("docs", "search_pages")
    assert underscored == "mcp__docs__search_pages"
    assert dotted.startswith("mcp__docs__search_pages_") and len(dotted) == len("mcp__docs__search_pages_") + 8
    assert dotted != underscored and TOOL_NAME.fullmatch(dotted)


def test_a_long_name_is_cut_to_64_characters_and_is_the_same_at_every_start():
    long_tool = "t" * 100
    name = exposed_name("server", long_tool)
    assert len(name) == 64 and TOOL_NAME.fullmatch(name)
    assert name == exposed_name("server", long_tool)
    assert name != exposed_name("server", "t" * 99)


@given(st.text(min_size=1, max_size=80), st.text(min_size=1, max_size=150))
def test_every_name_is_a_valid_tool_name_of_i(server, tool):
    name = exposed_name(server, tool)
    assert TOOL_NAME.fullmatch(name)
    assert name.startswith("mcp__")
