"""Lazy start through the real `i`: a worker starts when the run first needs it, and only then.

The standard profile runs against the scripted model with three of its modules bound (bindings.json)
to the official programs behind a wrapper that records every start in a marker file: `web` (a
tool-only worker), `approval` (asked only about tool calls) and `compact` (only when compacting).
A binding replaces only the module it names: prompts and skills keep sharing one bundled process.
"""

from __future__ import annotations

import shlex
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson

from i_core.executables import core_worker_argv
from i_core.pool import worker_name
from i_core.runtime import Runtime
from i_core.selection import generate_manifest
from i_scripted import ScriptedModel

BIN = Path(sys.executable).parent
OFFICIAL = {
    "web": [str(BIN / "i-web")],
    "approval": [sys.executable, "-m", "i_core", "--runtime", "worker", "approval"],
    "compact": [str(BIN / "i-compact")],
}


def _bind_marked(tmp_path: Path, config_dir: Path) -> dict[str, Path]:
    """Bind each module of OFFICIAL to its program behind a start-recording wrapper; the markers."""
    markers, bindings = {}, {}
    for module, argv in OFFICIAL.items():
        marker = tmp_path / f"{module}.starts"
        wrapper = tmp_path / f"{module}-marked"
        wrapper.write_text(f'#!/bin/sh\necho "$$" >> {shlex.quote(str(marker))}\nexec {shlex.join(argv)} "$@"\n')
        wrapper.chmod(0o755)
        markers[module] = marker
        bindings[module] = {"exec": [str(wrapper)]}
    (config_dir / "bindings.json").write_bytes(orjson.dumps(bindings))
    return markers


@contextmanager
def _page(text: bytes) -> Iterator[str]:
    """A loopback HTTP server answering every GET with ``text``; yields its URL."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(text)))
            self.end_headers()
            self.wfile.write(text)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/page"
    finally:
        server.shutdown()
        server.server_close()


def _starts(marker: Path) -> int:
    return len(marker.read_text().split()) if marker.exists() else 0


def test_a_run_without_tool_calls_starts_no_tool_approval_or_compaction_worker(
    i, write_config, plugins, project, dirs, tmp_path
):
    plugins("standard")
    markers = _bind_marked(tmp_path, dirs["config"])
    with ScriptedModel([{"text": "Hello there."}]) as model:
        write_config(model.base_url)
        done = i("-C", str(project), "--no-stream", "hello")
    assert done.returncode == 0, done.stderr
    assert "Hello there." in done.stdout
    assert {module: _starts(marker) for module, marker in markers.items()} == {"web": 0, "approval": 0, "compact": 0}
    # Not started is not hidden: the model was offered the web and skill tools from the manifest,
    # and the bundled prompts worker (in the shared process) wrote the system prompt.
    body = model.requests[0].body
    offered = {tool["function"]["name"] for tool in body["tools"]}
    assert {"web_fetch", "web_search", "skill_load", "memory_get"} <= offered
    assert body["messages"][0]["role"] == "system" and str(project) in body["messages"][0]["content"]


def test_a_tool_worker_starts_at_its_first_call_and_only_once(i, write_config, plugins, project, dirs, tmp_path):
    plugins("standard")
    markers = _bind_marked(tmp_path, dirs["config"])
    (dirs["config"] / "web.json").write_bytes(orjson.dumps({"allow_private": ["127.0.0.1/32"]}))
    with _page(b"lazy page body") as url:
        fetch = {"tool_calls": [{"name": "web_fetch", "arguments": {"url": url}}]}
        with ScriptedModel([fetch, fetch, {"text": "done"}]) as model:
            write_config(model.base_url)
            done = i("-C", str(project), "--no-stream", "--yolo", "fetch it twice")
    assert done.returncode == 0, done.stderr
    assert {module: _starts(marker) for module, marker in markers.items()} == {"web": 1, "approval": 1, "compact": 0}
    # Both calls were answered by the one web worker: the page's text came back twice.
    answers = [m["content"] for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
    assert len(answers) == 2 and all("lazy page body" in answer for answer in answers)


# -- needing every worker installed (the e2e environment) ---------------------------------------

GROUP = core_worker_argv("approval,prompts,skills")


def _builtin(config_dir: Path, profile: str, **files: object) -> None:
    (config_dir / "plugins.json").write_bytes(orjson.dumps({"profile": profile, "disabled": []}))
    (config_dir / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
    for name, content in files.items():
        (config_dir / f"{name}.json").write_bytes(orjson.dumps(content))


def test_the_standard_profile_runs_its_bundled_modules_in_one_process(dirs):
    manifest = generate_manifest("standard", dirs["config"])
    hooks = {entry["module"]: entry["exec"] for entry in manifest["hooks"]}
    tools = {entry["name"]: entry["exec"] for entry in manifest["tools"]}
    assert hooks["approval"] == hooks["prompts"] == hooks["skills"] == GROUP
    assert tools["skill_load"] == tools["skill_read"] == GROUP
    assert GROUP not in (hooks["budget"], hooks["memory"], tools["memory_get"])


def test_a_binding_replaces_only_the_module_it_names(dirs, tmp_path):
    mine = tmp_path / "my-prompts"
    mine.write_text("#!/bin/sh\nexit 0\n")
    mine.chmod(0o755)
    manifest = generate_manifest("standard", dirs["config"], bindings={"prompts": {"exec": [str(mine)]}})
    by_module = {entry["module"]: entry["exec"] for entry in manifest["hooks"]}
    assert by_module["prompts"] == [str(mine)]
    assert by_module["approval"] == by_module["skills"] == core_worker_argv("approval,skills")


def test_a_session_starts_only_what_its_first_request_needs(dirs, project, env, monkeypatch):
    for key in ("I_CONFIG_DIR", "I_DATA_DIR", "I_CACHE_DIR", "I_RUNTIME_DIR"):
        monkeypatch.setenv(key, env[key])  # the runtime runs in this process: never the user's folders
    _builtin(dirs["config"], "standard", mcp={"mcpServers": {}})
    with Runtime(project) as runtime:
        started = sorted(worker_name(worker.process.args) for worker in runtime.pool.running())
    # The shared bundled process (system_prompt, before_turn), memory (before_turn), budget and
    # cache (the first request) and mcp (tools_list); not compact, not web (tools only).
    assert started == ["i --runtime worker approval,prompts,skills", "i-budget", "i-cache", "i-mcp", "i-memory"]
