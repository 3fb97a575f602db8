"""Shared fixtures: temp platform directories, a project, config writing, real worker processes."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled
from i_protocol.workspace import workspace_id_for, workspace_state_dir

EXE = Path(sys.executable).parent / "i-cache"


class Env:
    """Temp directories for one test, and helpers to talk to the real ``i-cache``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.config_dir = root / "config"
        self.data_dir = root / "data"
        self.project = root / "project"
        for folder in (self.config_dir, self.data_dir, self.project, root / "cache", root / "runtime"):
            folder.mkdir(parents=True, exist_ok=True)
        self.workers: list[WorkerProcess] = []

    @property
    def env(self) -> dict[str, str]:
        return {
            "PATH": os.environ.get("PATH", ""),
            "PYTHONUTF8": "1",
            "HOME": str(self.root),
            "I_CONFIG_DIR": str(self.config_dir),
            "I_DATA_DIR": str(self.data_dir),
            "I_CACHE_DIR": str(self.root / "cache"),
            "I_RUNTIME_DIR": str(self.root / "runtime"),
        }

    @property
    def context(self) -> dict[str, Any]:
        return {"workspace": str(self.project)}

    def config(self, data: dict[str, Any]) -> Path:
        path = self.config_dir / "cache.json"
        path.write_bytes(orjson.dumps(data))
        return path

    def spawn(self, *args: str) -> WorkerProcess:
        worker = WorkerProcess.spawn([str(EXE), *args], env=self.env, cwd=str(self.root))
        self.workers.append(worker)
        return worker

    def call(self, worker: WorkerProcess, event: str, data: dict[str, Any]) -> dict[str, Any]:
        return worker.call(event, data, context=self.context, timeout=scaled(15))

    def state_dir(self) -> Path:
        return workspace_state_dir(workspace_id_for(self.project, self.data_dir), self.data_dir)

    def stats_path(self, relative: str = "metrics/cache-stats.json") -> Path:
        return self.state_dir() / relative

    def stats(self, relative: str = "metrics/cache-stats.json") -> dict[str, Any]:
        return orjson.loads(self.stats_path(relative).read_bytes())

    def report(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(EXE), "report", "-C", str(self.project), *args],
            env=self.env,
            cwd=str(self.root),
            capture_output=True,
            text=True,
            timeout=scaled(30),
        )

    def report_json(self, *args: str) -> dict[str, Any]:
        done = self.report("--json", *args)
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    box = Env(tmp_path)
    yield box
    for worker in box.workers:
        worker.close()


def chat_body(turns: int, *, system: str = "You are a careful assistant.", size: int = 40) -> dict[str, Any]:
    """An OpenAI-shaped body with a system message and ``turns`` user/assistant pairs."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "q" * size})
        messages.append({"role": "assistant", "content": f"answer {i} " + "a" * size})
    # chat_body(n + 1) extends chat_body(n): the last question is the next turn's first message.
    messages.append({"role": "user", "content": f"question {turns} " + "q" * size})
    return {"model": "m1", "messages": messages}


def request_data(body: dict[str, Any], protocol: str = "openai", model: str = "m1", **meta: Any) -> dict[str, Any]:
    data: dict[str, Any] = {"protocol": protocol, "model": model, "url": "http://127.0.0.1:9/v1/chat", "body": body}
    if meta:
        data["request_meta"] = meta
    return data


BodyFactory = Callable[..., dict[str, Any]]
