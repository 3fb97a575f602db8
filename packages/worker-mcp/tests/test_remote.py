"""Remote servers over streamable HTTP: a real SDK server on loopback (trusted by the user's mcp.json),
and the egress rules that refuse everything else. Real i-mcp processes, real HTTP."""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import ipaddress
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest

from i_protocol import ErrorFrame

HTTP_SERVER = Path(__file__).parent / "http_server.py"
TOKEN = "tok-" + "5f0c1e9a7b3d4c2e8f6a1b0c9d8e7f6a"
SHOWS_PROBLEMS = {"tools": [], "problems": []}
# A bogus proxy in every variable an HTTP client may read: i-mcp must go direct.
PROXIES = {
    name: "http://127.0.0.1:9" for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")
}


class Server:
    def __init__(self, *args: str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(HTTP_SERVER), *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        assert self.process.stdout is not None
        self.port = int(self.process.stdout.readline())

    def url(self, path: str = "/mcp", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def stop(self) -> None:
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def token_server() -> Iterator[Server]:
    server = Server("--bearer", TOKEN)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def json_server() -> Iterator[Server]:
    server = Server("--json")
    yield server
    server.stop()


def _remote(url: str, **fields: object) -> dict[str, object]:
    return {"url": url, **fields}


def _token_file(env) -> str:
    path = Path(env.paths["config_dir"]) / "token"
    path.write_text(TOKEN + "\n")
    return "token"  # relative: resolved against mcp.json's folder


def test_a_trusted_loopback_server_answers_with_its_token_from_a_file_and_no_proxy(env, token_server):
    env.write_config(
        {"remote": _remote(token_server.url(), allow_private=True, bearer_token={"file": _token_file(env)})}
    )
    worker = env.spawn(**PROXIES)
    listed = env.call(worker, "tools_list", dict(SHOWS_PROBLEMS))
    assert listed["problems"] == []
    assert {"mcp__remote__echo", "mcp__remote__steps", "mcp__remote__authorization"} <= {
        tool["name"] for tool in listed["tools"]
    }
    assert env.call(worker, "tool", {"name": "mcp__remote__echo", "arguments": {"text": "hi"}}) == {
        "output": "echo: hi"
    }
    # A server that echoes its credentials: the token never reaches the core.
    echoed = env.call(worker, "tool", {"name": "mcp__remote__authorization", "arguments": {}})
    assert echoed == {"output": "[redacted]"}
    # Progress notifications arrive over the event stream and are relayed.
    seen: list[dict] = []
    steps = {"name": "mcp__remote__steps", "arguments": {"count": 3, "every": 0.05}}
    assert env.call(worker, "tool", steps, progress=seen.append) == {"output": "3 steps"}
    assert [update["progress"] for update in seen] == [1, 2, 3]


def test_without_the_token_the_server_refuses_and_the_message_names_no_secret(env, token_server):
    env.write_config({"remote": _remote(token_server.url(), allow_private=True)})
    answer = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))
    (problem,) = answer["problems"]
    assert problem["server"] == "remote" and problem["reason"] == "failed"
    assert f"could not connect to {token_server.url()}: " in problem["message"]
    assert "answered HTTP 401 Unauthorized; it wants credentials" in problem["message"]


def test_a_missing_token_file_is_a_config_problem_naming_the_file_and_the_field(env, token_server):
    env.write_config({"remote": _remote(token_server.url(), allow_private=True, bearer_token={"file": "nope"})})
    worker = env.spawn()
    (problem,) = env.call(worker, "tools_list", dict(SHOWS_PROBLEMS))["problems"]
    where = f"{env.paths['config_dir']}/mcp.json: mcpServers.remote.bearer_token: cannot read"
    assert problem["reason"] == "config" and problem["message"].startswith(where)
    assert "nope: No such file or directory" in problem["message"]
    with pytest.raises(ErrorFrame, match=r"mcpServers\.remote\.bearer_token: cannot read") as info:
        env.call(worker, "tools_list", {"tools": []})  # an older core: the configuration error, exit 3
    assert info.value.kind == "config"


@pytest.mark.parametrize(
    "host, said",
    [
        ("127.0.0.1", "refused to connect to 127.0.0.1: a loopback address; only public addresses are allowed"),
        ("localhost", "refused to connect to localhost: it names this machine"),
    ],
)
def test_a_loopback_server_not_trusted_by_the_user_is_refused_before_connecting(env, json_server, host, said):
    env.write_config({"remote": _remote(json_server.url(host=host, scheme="https"))})
    (problem,) = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))["problems"]
    assert problem["reason"] == "failed" and said in problem["message"]
    assert '"allow_private": true' in problem["message"]


def test_a_project_file_can_never_reach_a_private_address(env, json_server):
    env.write_config({})
    project = env.workspace / ".mcp.json"
    entries = {
        "trusting": _remote(json_server.url(), allow_private=True),
        "loopback": _remote(json_server.url(scheme="https")),
    }
    project.write_bytes(orjson.dumps({"mcpServers": entries}))
    approved = {"path": str(project), "sha256": hashlib.sha256(project.read_bytes()).hexdigest()}
    answer = env.call_with(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS), mcp_project=approved)
    problems = {problem["server"]: problem for problem in answer["problems"]}
    assert answer["tools"] == []
    assert problems["trusting"]["reason"] == "config"
    assert "mcpServers.trusting.allow_private: a project's .mcp.json cannot trust" in problems["trusting"]["message"]
    assert "refused to connect to 127.0.0.1: a loopback address" in problems["loopback"]["message"]


def test_plain_http_to_a_public_address_is_refused(env):
    env.write_config(
        {
            "named": _remote("http://mcp.example.com/mcp"),
            "trusted": _remote("http://93.184.216.34/mcp", allow_private=True),
        }
    )
    problems = {p["server"]: p for p in env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))["problems"]}
    assert problems["named"]["reason"] == "config"
    assert "mcpServers.named.url: plain http is only for a server the user trusts" in problems["named"]["message"]
    # Even a server the user trusts: plain http never goes to a public address (nothing is sent).
    assert "refused plain http to 93.184.216.34, a public address; use https" in problems["trusted"]["message"]


def test_a_redirect_to_another_origin_is_not_followed(env, json_server):
    env.write_config({"remote": _remote(json_server.url("/moved"), allow_private=True)})
    (problem,) = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))["problems"]
    assert f"Redirect to http://127.0.0.2:{json_server.port}/mcp not followed" in problem["message"]


@pytest.mark.parametrize("mode", ["json", "event-stream"])
def test_an_answer_over_the_limit_is_refused_as_too_large(env, json_server, token_server, mode):
    server, extra = (
        (json_server, {}) if mode == "json" else (token_server, {"bearer_token": {"file": _token_file(env)}})
    )
    env.write_config({"remote": _remote(server.url(), allow_private=True, **extra)})
    worker = env.spawn()
    answer = env.call(worker, "tool", {"name": "mcp__remote__big", "arguments": {"megabytes": 20}})
    assert answer["is_error"] is True
    assert "over i-mcp's limit of 16 MB (too large; it was not read)" in answer["output"]
    # The session goes on.
    assert env.call(worker, "tool", {"name": "mcp__remote__echo", "arguments": {"text": "x"}}) == {"output": "echo: x"}


def test_tls_is_verified(env, tmp_path):
    cert, key = _self_signed(tmp_path)
    server = Server("--json", "--tls", str(cert), str(key))
    try:
        env.write_config({"remote": _remote(server.url(host="localhost", scheme="https"), allow_private=True)})
        (problem,) = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))["problems"]
    finally:
        server.stop()
    assert "certificate verify failed" in problem["message"]


def _self_signed(folder: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "cert.pem", folder / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


def test_an_event_is_passed_on_as_soon_as_its_blank_line_arrives_and_an_oversized_one_is_answered():
    from i_mcp import remote

    async def chunks(parts: list[bytes]):
        for part in parts:
            yield part

    async def read(parts: list[bytes], limit: int = 100) -> list[bytes]:
        return [piece async for piece in remote._EventStream(chunks(parts), 7, limit)]

    # A CRLF blank line is passed on whole: the SDK's reader waits on a trailing CR for the next chunk.
    crlf = [b"event: message\r\ndata: {}\r\n", b"\r\n", b"data: 2\r\n\r\ndata: 3"]
    assert asyncio.run(read(crlf)) == [b"event: message\r\ndata: {}\r\n\r\n", b"data: 2\r\n\r\n", b"data: 3"]
    assert asyncio.run(read([b"data: 1\n\ndata: 2\n", b"\n"])) == [b"data: 1\n\n", b"data: 2\n\n"]
    answered = asyncio.run(read([b"data: 1\n\n", b"data: " + b"x" * 200]))
    assert answered[0] == b"data: 1\n\n" and len(answered) == 2
    error = orjson.loads(answered[1].split(b"data: ", 1)[1])
    assert error["id"] == 7 and error["error"]["code"] == remote.TOO_LARGE
    assert "(too large; it was not read)" in error["error"]["message"]


def test_every_dns_answer_is_checked(env):
    """This machine's own name resolves (through /etc/hosts or DNS) to an address that is not public."""
    name = socket.gethostname()
    try:
        answers = {info[4][0] for info in socket.getaddrinfo(name, 443, type=socket.SOCK_STREAM)}
    except OSError:
        pytest.skip(f"{name} does not resolve here")
    if all(ipaddress.ip_address(a.split("%")[0]).is_global for a in answers):
        pytest.skip(f"{name} resolves to public addresses only here")
    env.write_config({"remote": _remote(f"https://{name}:9/mcp")})
    (problem,) = env.call(env.spawn(), "tools_list", dict(SHOWS_PROBLEMS))["problems"]
    assert f"refused to connect to {name.lower()} (resolves to " in problem["message"]
    assert "only public addresses are allowed" in problem["message"]
