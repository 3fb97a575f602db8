"""Test harness: the installed console script, isolated directories, calls through the real process."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

EXE = Path(sys.executable).parent / "i-memory"
WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


class Env:
    """Temporary platform directories and a way to start the real worker against them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.paths = {name: str(root / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        self.state_dir = root / "data_dir" / "workspaces" / WORKSPACE_ID
        self.memory_file = self.state_dir / "memory.json"
        self.config_file = root / "config_dir" / "memory.json"
        self.workers: list[WorkerProcess] = []

    def context(self, **extra: Any) -> dict[str, Any]:
        """Request context with explicit paths and the fixed workspace id (override with kwargs)."""
        context: dict[str, Any] = {"workspace_id": WORKSPACE_ID, "paths": self.paths}
        context.update(extra)
        return {key: value for key, value in context.items() if value is not None}

    def spawn(self, *args: str) -> WorkerProcess:
        """Start the real ``i-memory`` with a minimal environment pointing at the temp dirs."""
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
        env.update({f"I_{key.split('_')[0].upper()}_DIR": value for key, value in self.paths.items()})
        worker = WorkerProcess.spawn([str(EXE), *args], env=env, cwd=str(self.root))
        self.workers.append(worker)
        return worker

    def write_config(self, config: dict[str, Any]) -> None:
        import orjson

        self.config_file.parent.mkdir(parents=True, exist_ok=True)
        self.config_file.write_bytes(orjson.dumps(config))


def tool(worker: WorkerProcess, env: Env, name: str, **arguments: Any) -> str:
    """Call one memory tool through the real process and return its output text."""
    data = worker.call("tool", {"name": name, "arguments": arguments}, context=env.context())
    output = data["output"]
    assert isinstance(output, str)
    return output


_raw_ids = iter(range(1_000_000, 2_000_000))


def frame(worker: WorkerProcess, env: Env, event: str, data: dict[str, Any], **context: Any) -> dict[str, Any]:
    """Send one request and return the whole response frame; an error frame does not retire the worker."""
    import orjson

    request_id = next(_raw_ids)
    message = {"id": request_id, "event": event, **env.context(**context), "data": data}
    response = orjson.loads(worker.call_frame(orjson.dumps(message) + b"\n", timeout=scaled(15)))
    assert response["id"] == request_id
    return response


def tool_error(worker: WorkerProcess, env: Env, name: str, **arguments: Any) -> str:
    """Call a tool that must fail; return its error text."""
    response = frame(worker, env, "tool", {"name": name, "arguments": arguments})
    assert "error" in response, response
    error = response["error"]
    assert isinstance(error, str)
    return error
