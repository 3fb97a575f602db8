"""A remote MCP server over streamable HTTP through the real core: the SDK's server on loopback,
trusted by the user's mcp.json, called by the model; and the one place where both the web worker and
i-mcp are installed, so the check that their address rules (i_mcp.remote mirrors i_web.address) agree."""

from __future__ import annotations

import ipaddress
import random
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_mcp import remote
from i_scripted import ScriptedModel
from i_web import address

HTTP_SERVER = Path(__file__).resolve().parents[2] / "packages" / "worker-mcp" / "tests" / "http_server.py"

SAMPLES = [
    "127.0.0.1",
    "127.255.0.9",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "169.254.1.1",
    "100.64.0.1",
    "100.100.100.200",
    "0.0.0.0",
    "224.0.0.1",
    "240.0.0.1",
    "255.255.255.255",
    "192.0.2.1",
    "198.51.100.7",
    "203.0.113.9",
    "8.8.8.8",
    "93.184.216.34",
    "::1",
    "::",
    "fe80::1",
    "fc00::1",
    "fd00:ec2::254",
    "::ffff:127.0.0.1",
    "::ffff:8.8.8.8",
    "::127.0.0.1",
    "2002:7f00:1::",
    "2002:808:808::",
    "64:ff9b::a00:1",
    "64:ff9b::808:808",
    "2001:db8::1",
    "2606:4700:4700::1111",
    "ff02::1",
]


def test_i_mcp_judges_every_address_as_the_web_worker_does():
    rng = random.Random(35)
    extra = [str(ipaddress.IPv4Address(rng.getrandbits(32))) for _ in range(2000)]
    extra += [str(ipaddress.IPv6Address(rng.getrandbits(128))) for _ in range(500)]
    for text in [*SAMPLES, *extra]:
        found = ipaddress.ip_address(text)
        assert remote.refusal_reason(found) == address.refusal_reason(found), text
    for host in ("localhost", "a.localhost", "ip6-loopback", "example.com", "2130706433", "0x7f.1", "127.1"):
        assert remote.is_localhost_name(host) == address.is_localhost_name(host), host
        assert _numeric_refused(remote.literal_address, remote.EgressFailure, host) == _numeric_refused(
            address.literal_address, address.WebError, host
        ), host


def _numeric_refused(parse, error: type[Exception], host: str) -> bool:
    try:
        parse(host)
    except error:
        return True
    return False


@pytest.fixture
def server():
    process = subprocess.Popen([sys.executable, str(HTTP_SERVER)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert process.stdout is not None
    port = int(process.stdout.readline())
    yield f"http://127.0.0.1:{port}/mcp"
    process.kill()
    process.wait()


def test_the_model_calls_a_remote_server_trusted_on_loopback(i, write_config, plugins, project, dirs, server):
    plugins("mcp")
    entry = {"type": "http", "url": server, "allow_private": True}
    (dirs["config"] / "mcp.json").write_bytes(orjson.dumps({"mcpServers": {"remote": entry}}))
    steps = [{"tool_calls": [{"name": "mcp__remote__echo", "arguments": {"text": "over http"}}]}, {"text": "done"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "say it over http")
    assert result.returncode == 0, result.stderr
    offered = {tool["function"]["name"] for tool in model.requests[0].body["tools"]}
    assert "mcp__remote__echo" in offered
    tool_messages = [m["content"] for m in model.requests[1].body["messages"] if m["role"] == "tool"]
    assert tool_messages == ["echo: over http"]


def test_a_project_file_naming_a_loopback_server_is_not_used_and_said(i, write_config, plugins, project, dirs, server):
    """Without a terminal the project's file is never approved; the user's own mcp.json trusting the
    same address does not make the project's entry trusted either."""
    plugins("mcp")
    (dirs["config"] / "mcp.json").write_bytes(b"{}")
    (project / ".mcp.json").write_bytes(orjson.dumps({"mcpServers": {"evil": {"url": server, "allow_private": True}}}))
    with ScriptedModel([{"text": "fine"}]) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "--yolo", "hi")
    assert result.returncode == 0, result.stderr
    assert not any(tool["function"]["name"].startswith("mcp__evil") for tool in model.requests[0].body.get("tools", []))
