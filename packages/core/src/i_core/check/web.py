"""The web module's invariants, on loopback servers only (never the network): private addresses
refused before any connection, an explicitly trusted host fetched, a redirect to an untrusted
address refused, the configured search endpoint mapped, and error frames for bad arguments."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..hook_results import CHECKS
from ..modules import MODULES
from .loopback import PAGE_TEXT, Loopback
from .probe import CheckFailed, Probe, Run, expect_error


def _configure(run: Run, config: dict[str, Any] | None) -> None:
    path = Path(run.config_file("web.json"))
    if config is None:
        path.unlink(missing_ok=True)
    else:
        path.write_bytes(orjson.dumps(config))


def _tool(probe: Probe, name: str, arguments: dict[str, Any]) -> str:
    sent = {"name": name, "arguments": arguments}
    return str(CHECKS["tool"](probe.call("tool", sent), sent).output)


def private_refused(run: Run) -> str:
    """With the default config a loopback URL is refused, and the server never sees a request."""
    _configure(run, None)
    with Loopback() as server, run.probe() as probe:
        detail = expect_error(
            probe, "tool", {"name": "web_fetch", "arguments": {"url": server.url + "/"}}, "a loopback URL"
        )
    if server.hits:
        raise CheckFailed(f"web_fetch refused {server.url} only after connecting to it ({len(server.hits)} request(s))")
    return detail


def trusted_fetch(run: Run) -> str:
    """``allow_private: ["127.0.0.1/32"]`` lets exactly that address through; a redirect from it to
    127.0.0.2 is refused before connecting."""
    with Loopback("127.0.0.2") as other, Loopback(redirect_to=other.url + "/") as server:
        _configure(run, {"allow_private": ["127.0.0.1/32"]})
        with run.probe() as probe:
            output = _tool(probe, "web_fetch", {"url": server.url + "/"})
            if PAGE_TEXT not in output:
                raise CheckFailed(f"web_fetch of the trusted loopback page did not return its text: {output[:100]!r}")
            expect_error(
                probe, "tool", {"name": "web_fetch", "arguments": {"url": server.url + "/redirect"}}, "a redirect"
            )
        if other.hits:
            raise CheckFailed("web_fetch followed a redirect to 127.0.0.2, which is not trusted")
    return "trusted page fetched; redirect to 127.0.0.2 refused"


def search(run: Run) -> str:
    """Without a search section ``web_search`` is an error; with one it maps the endpoint's results."""
    with Loopback() as server:
        _configure(run, None)
        with run.probe() as probe:
            expect_error(probe, "tool", {"name": "web_search", "arguments": {"query": "q"}}, "no search configured")
        _configure(
            run,
            {
                "allow_private": ["127.0.0.1/32"],
                "search": {"url": server.url + "/search", "results": {"path": "results"}},
            },
        )
        with run.probe() as probe:
            output = _tool(probe, "web_search", {"query": "check"})
    if "Check result" not in output:
        raise CheckFailed(f"web_search did not return the endpoint's result: {output[:100]!r}")
    return "unconfigured search refused; loopback endpoint mapped"


def error_rules(run: Run) -> str:
    """Every declared tool refuses a call without its required argument; an unknown tool is refused."""
    _configure(run, None)
    with run.probe() as probe:
        for tool in MODULES["web"].tools:
            expect_error(probe, "tool", {"name": tool["name"], "arguments": {}}, "no arguments")
        expect_error(probe, "tool", {"name": "web_fetch", "arguments": {"url": "file:///etc/passwd"}}, "a file: URL")
        expect_error(probe, "tool", {"name": "x_check_tool", "arguments": {}}, "an unknown tool")
    return "missing arguments, file: URL and unknown tool refused"


CHECKS_OF_MODULE = (
    ("web_fetch: private networks refused", private_refused),
    ("web_fetch: trusted host only, redirects checked", trusted_fetch),
    ("web_search: configured endpoint", search),
    ("web tools: error rules", error_rules),
)
