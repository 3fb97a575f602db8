"""Fixtures: isolated directories, an mcp.json naming the SDK fixture server, the real worker process."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

EXE = Path(sys.executable).parent / "i-mcp"
SERVER = Path(__file__).parent / "fixture_server.py"
WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


class Env:
    """Temporary platform directories, mcp.json in its config dir, and the real worker against them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = {name: str(root / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        for path in self.paths.values():
            os.makedirs(path)
        self.workspace = root / "workspace"
        self.workspace.mkdir()
        self.log = root / "starts.log"
        self.workers: list[WorkerProcess] = []

    def server(self, **entry: Any) -> dict[str, Any]:
        """An mcp.json entry running the fixture server (logging its starts), with ``entry`` over it."""
        env = {"FIXTURE_LOG": str(self.log), **entry.pop("env", {})}
        return {"command": sys.executable, "args": [str(SERVER)], "env": env, **entry}

    def write_config(self, servers: dict[str, Any]) -> Path:
        path = Path(self.paths["config_dir"]) / "mcp.json"
        path.write_bytes(orjson.dumps({"mcpServers": servers}))
        return path

    def starts(self) -> int:
        return self.log.read_text().count("start") if self.log.exists() else 0

    def spawn(self, **extra: str) -> WorkerProcess:
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1", "HOME": str(self.root), **extra}
        worker = WorkerProcess.spawn([str(EXE)], env=env, cwd=str(self.root))
        self.workers.append(worker)
        return worker

    def call_with(self, worker: WorkerProcess, event: str, data: dict[str, Any], **context: Any) -> dict[str, Any]:
        """``call`` with more request context (``mcp_project``)."""
        full = {"workspace": str(self.workspace), "workspace_id": WORKSPACE_ID, "paths": self.paths, **context}
        return worker.call(event, data, context=full, timeout=scaled(15))

    def call(self, worker: WorkerProcess, event: str, data: dict[str, Any], **options: Any) -> dict[str, Any]:
        context = {"workspace": str(self.workspace), "workspace_id": WORKSPACE_ID, "paths": self.paths}
        return worker.call(event, data, context=context, timeout=scaled(15), **options)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    environment = Env(tmp_path)
    yield environment
    for worker in environment.workers:
        worker.close()
