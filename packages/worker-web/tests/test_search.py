"""web_search: config validation, request building, result mapping and credential handling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from loopback import Server, send

from i_protocol import WorkerConfig
from i_web.address import AddressPolicy
from i_web.errors import WebError
from i_web.search import json_path, map_results, parse_search_arguments, render_template, search
from i_web.settings import ResultMapping, load_settings

LOOPBACK = AddressPolicy.from_entries(["127.0.0.1/32"])
SECRET = "sk-test-0123456789abcdef"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "web.config.json"


def settings_for(tmp_path: Path, search_section: dict[str, Any], allow: list[str] | None = None):  # type: ignore[no-untyped-def]
    config_file = tmp_path / "web.json"
    data = {"search": search_section, "allow_private": allow if allow is not None else ["127.0.0.1/32"]}
    config_file.write_text(json.dumps(data))
    return load_settings(WorkerConfig(str(config_file), data), "0.0-test")


def json_route(document: Any, status: int = 200):  # type: ignore[no-untyped-def]
    return lambda h: send(h, status, json.dumps(document).encode(), "application/json")


BRAVE_LIKE = {
    "web": {
        "results": [
            {"title": "First <strong>hit</strong>", "url": "https://one.example/", "description": "Snippet &amp; more"},
            {"title": "No url here", "description": "skipped"},
            {"title": "Second", "url": "https://two.example/", "extra": {"d": 1}},
            {"title": "Third", "url": "https://three.example/", "description": "third"},
        ]
    }
}


def test_json_path() -> None:
    doc = {"a": {"b": [{"c": 1}, {"c": 2}]}}
    assert json_path(doc, "a.b.1.c") == 2
    assert json_path(doc, "") is doc
    assert json_path(doc, "a.x.c") is None
    assert json_path(doc, "a.b.9.c") is None
    assert json_path([5, 6], "1") == 6


def test_map_results_with_nested_paths_and_missing_fields() -> None:
    mapping = ResultMapping(path="web.results", title="title", url="url", snippet="description")
    results = map_results(BRAVE_LIKE, mapping, 10)
    assert [r.url for r in results] == ["https://one.example/", "https://two.example/", "https://three.example/"]
    assert results[0].title == "First hit" and results[0].snippet == "Snippet & more"
    assert results[1].snippet == ""
    assert len(map_results(BRAVE_LIKE, mapping, 2)) == 2
    nested = {"items": [{"meta": {"name": "N"}, "link": ["https://x/"], "href": "https://y/"}]}
    mapped = map_results(nested, ResultMapping(path="items", title="meta.name", url="href", snippet="link"), 5)
    assert (mapped[0].title, mapped[0].url, mapped[0].snippet) == ("N", "https://y/", "")


def test_map_results_requires_a_list() -> None:
    with pytest.raises(WebError, match=r"'web\.results' is not a list"):
        map_results({"web": {}}, ResultMapping(path="web.results"), 5)


def test_render_template() -> None:
    template = {"q": "{{query}}", "n": "{{count}}", "text": "find {{query}} x{{count}}", "list": ["{{query}}", 3]}
    assert render_template(template, "cats", 4) == {"q": "cats", "n": 4, "text": "find cats x4", "list": ["cats", 3]}


def test_search_get_sends_query_count_params_and_credential_header(tmp_path: Path, server: Server) -> None:
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "search.key").write_text(SECRET + "\n")
    server.routes["/search"] = json_route(BRAVE_LIKE)
    settings = settings_for(
        tmp_path,
        {
            "url": server.url("/search"),
            "query_param": "q",
            "count_param": "count",
            "params": {"safesearch": "moderate", "n": 1},
            "headers": {"X-Client": "i"},
            "results": {"path": "web.results", "title": "title", "url": "url", "snippet": "description"},
            "credentials_file": "keys/search.key",
            "credentials_header": {"header": "X-Subscription-Token", "prefix": ""},
        },
    )
    assert settings.search is not None
    out = search("cats & dogs", 2, settings.search, settings.policy, settings.user_agent)
    method, path, headers, _ = server.requests[0]
    assert method == "GET"
    assert "q=cats+%26+dogs" in path and "count=2" in path and "safesearch=moderate" in path and "n=1" in path
    assert headers["X-Subscription-Token"] == SECRET and headers["X-Client"] == "i"
    assert out.startswith('[web_search] 2 result(s) for "cats & dogs".')
    assert "untrusted data" in out
    assert "1. First hit\n   https://one.example/\n   Snippet & more" in out
    assert "2. Second\n   https://two.example/" in out
    assert "three" not in out and SECRET not in out


def test_search_post_json_body_template_and_bearer_default(tmp_path: Path, server: Server) -> None:
    key = tmp_path / "abs.key"
    key.write_text(SECRET)
    server.routes["/api"] = json_route({"data": [{"name": "R", "link": "https://r.example/", "text": "t"}]})
    settings = settings_for(
        tmp_path,
        {
            "url": server.url("/api?v=2"),
            "method": "POST",
            "body": {"search": {"text": "{{query}}", "limit": "{{count}}"}, "lang": "en"},
            "results": {"path": "data", "title": "name", "url": "link", "snippet": "text"},
            "credentials_file": str(key),
        },
    )
    assert settings.search is not None
    out = search("rust async", 3, settings.search, settings.policy, settings.user_agent)
    method, path, headers, body = server.requests[0]
    assert method == "POST" and path == "/api?v=2"
    assert json.loads(body) == {"search": {"text": "rust async", "limit": 3}, "lang": "en"}
    assert headers["Content-Type"] == "application/json"
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert "1. R\n   https://r.example/\n   t" in out


def test_credential_echoed_by_the_server_is_redacted(tmp_path: Path, server: Server) -> None:
    key = tmp_path / "k"
    key.write_text(SECRET)
    server.routes["/echo"] = json_route({"results": [{"title": f"token {SECRET}", "url": "https://e/"}]})
    server.routes["/deny"] = lambda h: send(h, 401, f'{{"error":"bad key {SECRET}"}}'.encode(), "application/json")
    section = {"url": server.url("/echo"), "credentials_file": str(key), "results": {"path": "results"}}
    settings = settings_for(tmp_path, section)
    assert settings.search is not None
    out = search("q", 5, settings.search, settings.policy, settings.user_agent)
    assert SECRET not in out and "token [redacted]" in out
    settings = settings_for(tmp_path, {**section, "url": server.url("/deny")})
    assert settings.search is not None
    with pytest.raises(WebError, match="HTTP 401") as info:
        search("q", 5, settings.search, settings.policy, settings.user_agent)
    assert SECRET not in str(info.value) and "[redacted]" in str(info.value)


def test_missing_credentials_file_error_names_the_file_only(tmp_path: Path, server: Server) -> None:
    settings = settings_for(tmp_path, {"url": server.url("/s"), "credentials_file": "nope.key"})
    assert settings.search is not None
    with pytest.raises(WebError, match=r"credentials_file .*nope\.key: cannot read"):
        search("q", 5, settings.search, settings.policy, settings.user_agent)
    assert server.requests == []


def test_search_redirects_are_not_followed(tmp_path: Path, server: Server) -> None:
    server.routes["/moved"] = lambda h: send(h, 302, b"", None, {"Location": "https://elsewhere.example/"})
    settings = settings_for(tmp_path, {"url": server.url("/moved")})
    assert settings.search is not None
    with pytest.raises(WebError, match=r"HTTP 302 .*not followed"):
        search("q", 5, settings.search, settings.policy, settings.user_agent)


def test_search_endpoint_obeys_the_address_policy(tmp_path: Path, server: Server) -> None:
    server.routes["/s"] = json_route([])
    settings = settings_for(tmp_path, {"url": server.url("/s"), "results": {"path": ""}}, allow=[])
    assert settings.search is not None
    with pytest.raises(WebError, match="loopback"):
        search("q", 5, settings.search, settings.policy, settings.user_agent)
    assert server.requests == []


def test_non_json_answer_is_an_error(tmp_path: Path, server: Server) -> None:
    server.routes["/html"] = lambda h: send(h, 200, b"<html>no</html>")
    settings = settings_for(tmp_path, {"url": server.url("/html")})
    assert settings.search is not None
    with pytest.raises(WebError, match="did not answer JSON"):
        search("q", 5, settings.search, settings.policy, settings.user_agent)


@pytest.mark.parametrize(
    ("section", "message"),
    [
        ({}, r"search\.url must be"),
        ({"url": "ftp://x/"}, r"search\.url must be"),
        ({"url": "https://x/", "method": "PUT"}, "method must be GET or POST"),
        ({"url": "https://x/", "body": {}}, "body is only used with method POST"),
        ({"url": "https://x/", "params": {"a": ["x"]}}, r"params\.a must be"),
        ({"url": "https://x/", "results": {"list": "x"}}, "unknown field"),
        ({"url": "https://x/", "credentials_header": {"header": "Bad Header"}}, "HTTP header name"),
        ({"url": "https://x/", "endpoint": "x"}, r"unknown field\(s\) endpoint"),
    ],
)
def test_search_config_errors_name_the_field(tmp_path: Path, section: dict[str, Any], message: str) -> None:
    with pytest.raises(WebError, match=message):
        settings_for(tmp_path, section)


def test_unknown_top_level_field_is_an_error() -> None:
    with pytest.raises(WebError, match="unknown field"):
        load_settings(WorkerConfig("/x/web.json", {"allow_privat": []}), "1")


def test_example_config_is_valid() -> None:
    data = json.loads(EXAMPLE.read_text())
    settings = load_settings(WorkerConfig(str(EXAMPLE), data), "1")
    assert settings.search is not None
    assert settings.search.credentials_file == str(EXAMPLE.parent / "search-api.key")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "'query'"),
        ({"query": " "}, "'query'"),
        ({"query": "x", "count": 0}, "'count'"),
        ({"query": "x", "count": 21}, "'count'"),
        ({"query": "x" * 2001}, "longer than"),
        ({"query": "x", "n": 1}, "unknown"),
    ],
)
def test_search_argument_validation(arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(WebError, match=message):
        parse_search_arguments(arguments)
