"""The mcp module's invariants, against a fixture MCP stdio server that the check writes itself.

The core cannot depend on the MCP SDK, so the fixture is a small standard-library server (the
JSON-RPC of MCP's stdio transport: initialize, tools/list, tools/call) run by the core's own
interpreter. Checks: ``tools_list`` announces its tools under valid names; text and image
results come back as the core reads them; a server that exits mid-call or never answers is a
tool error within the core's deadline and the next call works; a literal secret in mcp.json is
refused without being echoed; a fresh worker answers ``tools_list`` from its cache, without
starting the server.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import orjson

from i_protocol import ErrorFrame

from ..hook_results import CHECKS
from ..tools import tool_images
from .probe import CheckFailed, Probe, Run
from .samples import kept_unrelated, with_unrelated

_TIMEOUT_S = 2
"""The fixture server's ``timeout`` in mcp.json: how long the worker may wait for it."""
_CORE_DEADLINE_S = 15.0
_SECRET = "ghp_" + "abcdefghijklmnopqrstuvwxyz0123456789"
_PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
_TOOLS = ("echo", "image", "exit", "hang")

_SERVER = r"""
import json, os, sys
with open(os.environ["CHECK_MCP_LOG"], "a") as log:
    log.write("start\n")
schema = {"type": "object", "properties": {"text": {"type": "string"}}}
tools = [{"name": n, "description": "check fixture " + n, "inputSchema": schema} for n in %(tools)r]
def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()
for line in sys.stdin:
    request = json.loads(line)
    method, rid, params = request.get("method"), request.get("id"), request.get("params") or {}
    if rid is None:
        continue
    if method == "initialize":
        result = {"protocolVersion": params.get("protocolVersion"), "capabilities": {"tools": {}},
                  "serverInfo": {"name": "check-fixture", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": tools}
    elif method == "tools/call" and params.get("name") == "echo":
        result = {"content": [{"type": "text", "text": "echo: " + params["arguments"].get("text", "")}]}
    elif method == "tools/call" and params.get("name") == "image":
        result = {"content": [{"type": "image", "data": %(png)r, "mimeType": "image/png"}]}
    elif method == "tools/call" and params.get("name") == "exit":
        os._exit(3)
    elif method == "tools/call" and params.get("name") == "hang":
        continue  # never answers, but reads on: the end of stdin still ends it
    else:
        send({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "no such method"}})
        continue
    send({"jsonrpc": "2.0", "id": rid, "result": result})
"""


def _configure(run: Run, env: dict[str, Any] | None = None) -> str:
    """Write the fixture server and an mcp.json naming it; returns the server's start log."""
    config_dir = run.site.paths.config_dir
    script, log = os.path.join(config_dir, "check_mcp_server.py"), os.path.join(config_dir, "check_mcp_server.log")
    with open(script, "w", encoding="utf-8") as handle:
        handle.write(_SERVER % {"tools": _TOOLS, "png": _PNG})
    with open(log, "w", encoding="utf-8"):
        pass  # each check counts the starts it causes
    entry = {"command": sys.executable, "args": [script], "env": {"CHECK_MCP_LOG": log, **(env or {})}}
    with open(run.config_file("mcp.json"), "wb") as handle:
        handle.write(orjson.dumps({"mcpServers": {"fixture": {**entry, "timeout": _TIMEOUT_S}}}))
    return log


def _announced(probe: Probe) -> dict[str, dict[str, Any]]:
    sent = with_unrelated({"tools": []})
    answer = probe.call("tools_list", sent, timeout=_CORE_DEADLINE_S)
    problem = kept_unrelated(answer)
    if problem:
        raise CheckFailed(f"tools_list: {problem}")
    return {schema["name"]: schema for schema in CHECKS["tools_list"](answer, sent)}


def _call(probe: Probe, name: str, arguments: dict[str, Any]) -> Any:
    sent = {"name": name, "arguments": arguments}
    return CHECKS["tool"](probe.call("tool", sent, timeout=_CORE_DEADLINE_S), sent)


def announced_tools(run: Run) -> str:
    """``tools_list`` announces each fixture tool as ``mcp__fixture__TOOL``, valid by the core's rules."""
    _configure(run)
    with run.probe() as probe:
        names = sorted(_announced(probe))
    expected = sorted(f"mcp__fixture__{tool}" for tool in _TOOLS)
    if names != expected:
        raise CheckFailed(f"tools_list announced {names}, expected {expected}")
    return f"{len(names)} tools announced"


def results(run: Run) -> str:
    """A text result and an image result (a data URL that passes the core's image checks)."""
    _configure(run)
    with run.probe() as probe:
        echoed = _call(probe, "mcp__fixture__echo", {"text": "héllo"})
        if echoed.output != "echo: héllo" or echoed.is_error:
            raise CheckFailed(f"echo answered {echoed.output[:80]!r}, not 'echo: héllo'")
        image = _call(probe, "mcp__fixture__image", {})
    try:
        parts = tool_images(image.images)
    except Exception as exc:  # ToolError: what the core would refuse
        raise CheckFailed(f"the image result is refused by the core: {exc}") from None
    if len(parts) != 1:
        raise CheckFailed(f"the image result carried {len(parts)} images, expected 1")
    return "text kept exactly, 1 image as a data URL"


def failing_servers(run: Run) -> str:
    """A server that exits mid-call and one that never answers: each a tool error within the
    deadline, then the next call works."""
    _configure(run)
    seen = []
    with run.probe() as probe:
        for tool in ("exit", "hang"):
            started = time.monotonic()
            try:
                result = _call(probe, f"mcp__fixture__{tool}", {})
            except ErrorFrame as exc:
                problem = exc.problem
            else:
                if not result.is_error:
                    raise CheckFailed(f"{tool}: answered {result.output[:80]!r} without is_error")
                problem = result.output
            elapsed = time.monotonic() - started
            if "fixture" not in problem:
                raise CheckFailed(f"{tool}: the error does not name the server: {problem[:100]!r}")
            seen.append(f"{tool} in {elapsed:.1f} s")
            if _call(probe, "mcp__fixture__echo", {"text": "again"}).output != "echo: again":
                raise CheckFailed(f"after {tool}, the next call did not work")
    return ", ".join(seen) + "; the next calls worked"


def literal_secret(run: Run) -> str:
    """A literal value under a secret-looking env name is refused, and never echoed."""
    _configure(run, {"GITHUB_TOKEN": _SECRET})
    with run.probe() as probe:
        try:
            probe.call("tools_list", {"tools": []}, timeout=_CORE_DEADLINE_S)
        except ErrorFrame as exc:
            if _SECRET in exc.problem:
                raise CheckFailed("the literal secret was refused but echoed in the error") from None
            if "GITHUB_TOKEN" not in exc.problem:
                raise CheckFailed(f"the refusal does not name the variable: {exc.problem[:100]!r}") from None
            return "refused, naming GITHUB_TOKEN"
    raise CheckFailed("mcp.json with a literal GITHUB_TOKEN was accepted; it must be refused")


def cached_start(run: Run) -> str:
    """After one worker listed the tools, a fresh worker answers ``tools_list`` from its cache,
    without starting the server."""
    log = _configure(run)
    starts = []
    for _ in range(2):
        with run.probe() as probe:
            _announced(probe)
        with open(log, encoding="utf-8") as handle:
            starts.append(handle.read().count("start"))
    if starts[1] != starts[0]:
        raise CheckFailed("a second worker started the server for tools_list; it must answer from the cached tool list")
    return "the second worker answered from its cache"


CHECKS_OF_MODULE = (
    ("tools_list: announced tools", announced_tools),
    ("tool: text and image results", results),
    ("tool: a server that exits or hangs", failing_servers),
    ("mcp.json: a literal secret refused", literal_secret),
    ("tools_list: cached, no server start", cached_start),
)
