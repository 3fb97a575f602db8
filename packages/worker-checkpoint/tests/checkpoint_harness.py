"""Test harness: the installed console script, isolated directories, a git work tree, real calls."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import orjson

from i_protocol.host import WorkerProcess

EXE = Path(sys.executable).parent / "i-checkpoint"
WORKSPACE_ID = "0b6f1d1e-4f5a-4a53-9a4c-5f0a2d3c9e10"
SESSION = "s1"


class Env:
    """Temporary platform directories, a project folder, and the real worker against them."""

    def __init__(self, root: Path, *, git: bool = True) -> None:
        self.root = root
        self.paths = {name: str(root / name) for name in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        self.project = root / "project"
        self.project.mkdir()
        if git:
            (self.project / ".git").mkdir()  # what a work tree needs to be one (git itself is not run)
        self.store = root / "data_dir" / "workspaces" / WORKSPACE_ID / "checkpoints" / SESSION
        self.workers: list[WorkerProcess] = []
        self._calls = 0

    def spawn(self, *args: str) -> WorkerProcess:
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
        worker = WorkerProcess.spawn([str(EXE), *args], env=env, cwd=str(self.root))
        self.workers.append(worker)
        return worker

    def context(self) -> dict[str, Any]:
        return {"workspace": str(self.project), "workspace_id": WORKSPACE_ID, "paths": self.paths}

    def call(self, worker: WorkerProcess, event: str, data: dict[str, Any]) -> dict[str, Any]:
        return worker.call(event, data, context=self.context())

    def tool(self, worker: WorkerProcess, turn: int, name: str, arguments: dict[str, Any], run: Any) -> str | None:
        """``before_tool``, then ``run()`` (the tool's effect), then ``after_tool``; the notice if any."""
        self._calls += 1
        call = f"call_{self._calls}"
        sent = {"name": name, "arguments": orjson.dumps(arguments).decode(), "id": call, "session": SESSION}
        answer = self.call(worker, "before_tool", {**sent, "turn": turn})
        run()
        self.call(worker, "after_tool", {"name": name, "id": call, "output": "ok", "session": SESSION, "turn": turn})
        notice = answer.get("notice")
        return notice if isinstance(notice, str) else None

    def undo(self, worker: WorkerProcess, turn: int, *, dry_run: bool) -> dict[str, Any]:
        return self.call(worker, "undo", {"session": SESSION, "turn": turn, "dry_run": dry_run})

    def write_config(self, config: dict[str, Any]) -> None:
        path = self.root / "config_dir" / "checkpoint.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(orjson.dumps(config))


def tree(folder: Path) -> dict[str, tuple[str, Any, int]]:
    """Everything under ``folder`` but .git: kind, bytes or link target, mode."""
    found: dict[str, tuple[str, Any, int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            info = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path), 0)
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", None, stat.S_IMODE(info.st_mode))
            else:
                found[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return found
