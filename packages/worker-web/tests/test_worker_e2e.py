"""The real `i-web` console script over NDJSON: tools, config discovery, schemas, errors."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from loopback import Server, send

from i_protocol import ErrorFrame
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled
from i_web.__about__ import __version__
from i_web.schemas import TOOLS

EXE = Path(sys.executable).parent / "i-web"


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, str]:
    paths = {name: str(tmp_path / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
    for path in paths.values():
        Path(path).mkdir()
    return paths


def worker_env(dirs: dict[str, str], tmp_path: Path) -> dict[str, str]:
    env = {"PATH": "/usr/bin:/bin", "PYTHONUTF8": "1", "HOME": str(tmp_path)}
    env.update({f"I_{k.split('_')[0].upper()}_DIR": v for k, v in dirs.items()})
    return env


@pytest.fixture
def worker(dirs: dict[str, str], tmp_path: Path) -> Iterator[WorkerProcess]:
    proc = WorkerProcess.spawn([str(EXE)], env=worker_env(dirs, tmp_path), cwd=str(tmp_path))
    yield proc
    proc.close()


def call(worker: WorkerProcess, dirs: dict[str, str], name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    data = {"name": name, "arguments": arguments}
    return worker.call("tool", data, context={"workspace": "/project", "paths": dirs}, timeout=scaled(15))


def serve_lines(dirs: dict[str, str], tmp_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Send several tool frames to one worker process and collect every response frame."""
    frames = [
        json.dumps({"id": n, "event": "tool", "paths": dirs, "data": {"name": name, "arguments": args}})
        for n, (name, args) in enumerate(calls, 1)
    ]
    done = subprocess.run(
        [str(EXE)],
        input="\n".join(frames) + "\n",
        capture_output=True,
        text=True,
        env=worker_env(dirs, tmp_path),
        timeout=scaled(30),
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines()]


def write_config(dirs: dict[str, str], data: dict[str, Any]) -> None:
    Path(dirs["config_dir"], "web.json").write_text(json.dumps(data))


def test_version_and_schemas_commands() -> None:
    version = subprocess.run([str(EXE), "--version"], capture_output=True, text=True, check=True)
    assert version.stdout.startswith(f"i-worker-web {__version__} (i-protocol")
    schemas = subprocess.run([str(EXE), "schemas"], capture_output=True, text=True, check=True)
    assert json.loads(schemas.stdout) == TOOLS
    assert [t["name"] for t in TOOLS] == ["web_fetch", "web_search"]
    for tool in TOOLS:
        assert set(tool) == {"name", "description", "parameters"} and tool["parameters"]["type"] == "object"


def test_fetch_through_the_worker_with_trusted_loopback(
    worker: WorkerProcess, dirs: dict[str, str], server: Server
) -> None:
    server.routes["/doc"] = lambda h: send(h, 200, b"<h2>Worker</h2><p>over NDJSON</p>")
    write_config(dirs, {"allow_private": ["127.0.0.1/32"]})
    out = call(worker, dirs, "web_fetch", {"url": server.url("/doc")})["output"]
    assert "## Worker\n\nover NDJSON" in out and "untrusted" in out


def test_worker_refuses_loopback_by_default_and_keeps_serving(
    dirs: dict[str, str], tmp_path: Path, server: Server
) -> None:
    server.routes["/doc"] = lambda h: send(h, 200, b"secret", "text/plain")
    answers = serve_lines(
        dirs,
        tmp_path,
        [
            ("web_fetch", {"url": server.url("/doc")}),
            ("web_fetch", {"url": "http://a:b@example.com/"}),
            ("web_fetch", {"url": "file:///etc/passwd"}),
            ("web_fetch", {"url": "https://example.com/", "max_chars": "9"}),
            ("web_browse", {}),
            ("web_search", {"query": "x"}),
        ],
    )
    assert [a["id"] for a in answers] == [1, 2, 3, 4, 5, 6]
    assert "loopback address" in answers[0]["error"]
    assert "credentials" in answers[1]["error"]
    assert "scheme 'file'" in answers[2]["error"]
    assert "max_chars" in answers[3]["error"]
    assert "unknown tool" in answers[4]["error"]
    assert "web_search is not configured" in answers[5]["error"]
    assert server.requests == []
    write_config(dirs, {"allow_private": ["127.0.0.1/32"]})
    answers = serve_lines(dirs, tmp_path, [("web_fetch", {"url": server.url("/doc")})])
    assert "secret" in answers[0]["data"]["output"]


def test_search_through_the_worker(worker: WorkerProcess, dirs: dict[str, str], server: Server, tmp_path: Path) -> None:
    Path(dirs["config_dir"], "search.key").write_text("very-secret-key\n")
    server.routes["/s"] = lambda h: send(
        h, 200, json.dumps({"hits": [{"t": "T", "u": "https://u.example/", "s": "S"}]}).encode(), "application/json"
    )
    write_config(
        dirs,
        {
            "allow_private": ["127.0.0.1/32"],
            "search": {
                "url": server.url("/s"),
                "credentials_file": "search.key",
                "results": {"path": "hits", "title": "t", "url": "u", "snippet": "s"},
            },
        },
    )
    out = call(worker, dirs, "web_search", {"query": "hello", "count": 1})["output"]
    assert "1. T\n   https://u.example/\n   S" in out
    assert server.requests[0][2]["Authorization"] == "Bearer very-secret-key"
    assert "very-secret-key" not in worker.stderr.text()


def test_bad_config_is_an_error_frame(worker: WorkerProcess, dirs: dict[str, str]) -> None:
    write_config(dirs, {"allow_private": "everything"})
    with pytest.raises(ErrorFrame, match="allow_private must be a list"):
        call(worker, dirs, "web_fetch", {"url": "https://example.com/"})


def test_explicit_config_flag(dirs: dict[str, str], tmp_path: Path, server: Server) -> None:
    config = tmp_path / "elsewhere.json"
    config.write_text(json.dumps({"allow_private": ["127.0.0.1/32"]}))
    server.routes["/x"] = lambda h: send(h, 200, b"flag ok", "text/plain")
    proc = WorkerProcess.spawn([str(EXE), "--config", str(config)], env={"PATH": "/usr/bin:/bin"}, cwd=str(tmp_path))
    try:
        out = proc.call(
            "tool",
            {"name": "web_fetch", "arguments": {"url": server.url("/x")}},
            context={"paths": dirs},
            timeout=scaled(15),
        )
        assert "flag ok" in out["output"]
    finally:
        proc.close()


def test_trickle_is_cut_at_the_real_eight_second_deadline(
    worker: WorkerProcess, dirs: dict[str, str], server: Server
) -> None:
    import time

    def trickle(h: Any) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain")
        h.send_header("Content-Length", "100")
        h.end_headers()
        try:
            for _ in range(100):  # 20 s in total if nothing stops it
                h.wfile.write(b"z")
                h.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    server.routes["/slow"] = trickle
    write_config(dirs, {"allow_private": ["127.0.0.1/32"]})
    with pytest.raises(ErrorFrame, match="timed out: the fetch took longer than 8 s"):
        call(worker, dirs, "web_fetch", {"url": server.url("/slow")})
