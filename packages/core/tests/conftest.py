from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.testing import scaled

HERE = Path(__file__).parent


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """Isolated I_*_DIR directories, set in this process's environment for the test."""
    result = {}
    for key, env in (
        ("config", "I_CONFIG_DIR"),
        ("data", "I_DATA_DIR"),
        ("cache", "I_CACHE_DIR"),
        ("runtime", "I_RUNTIME_DIR"),
    ):
        path = tmp_path / key
        path.mkdir()
        monkeypatch.setenv(env, str(path))
        result[key] = path
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "README.md").write_text("# demo project\n")
    return path


@pytest.fixture
def chain_exec():
    """exec argv of the chain test worker with a label."""
    return lambda label, *extra: [sys.executable, str(HERE / "workers" / "chain_worker.py"), label, *extra]


@pytest.fixture
def faulty_exec():
    """exec argv of the faulty raw worker in a mode."""
    return lambda mode: [sys.executable, str(HERE / "workers" / "faulty_worker.py"), mode]


@pytest.fixture
def write_manifest(tmp_path: Path):
    def write(content: dict[str, Any], name: str = "manifest.json") -> Path:
        path = tmp_path / name
        path.write_bytes(orjson.dumps(content))
        return path

    return write


def i_command() -> list[str]:
    return [sys.executable, "-m", "i_core"]


@pytest.fixture
def run_i(dirs):
    """Run the real `i` command (as a process) with the test's directories."""
    import subprocess

    def run(*args: str, input: bytes | None = None, timeout: float = 60, env_extra: dict[str, str] | None = None):
        env = dict(os.environ)
        env.update(env_extra or {})
        # Without input, stdin is /dev/null: nothing is attached to a task (i_core.piped).
        stdin = subprocess.DEVNULL if input is None else None
        return subprocess.run(
            [*i_command(), *args], input=input, stdin=stdin, capture_output=True, timeout=scaled(timeout), env=env
        )

    return run
