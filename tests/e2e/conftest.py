"""Shared fixtures of the cross-package end-to-end tests (every package installed)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.testing import scaled

BIN = Path(sys.executable).parent
sys.path.insert(0, str(Path(__file__).parent))  # long_task.py, shared with bench/long_session.py


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, Path]:
    result = {}
    for key in ("config", "data", "cache", "runtime"):
        (tmp_path / key).mkdir()
        result[key] = tmp_path / key
    return result


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    path.mkdir()
    (path / "README.md").write_text("# demo project\n\nA small project used by the end-to-end tests.\n")
    return path


@pytest.fixture
def env(dirs: dict[str, Path]) -> dict[str, str]:
    value = dict(os.environ)
    value.update(
        {
            "I_CONFIG_DIR": str(dirs["config"]),
            "I_DATA_DIR": str(dirs["data"]),
            "I_CACHE_DIR": str(dirs["cache"]),
            "I_RUNTIME_DIR": str(dirs["runtime"]),
        }
    )
    value.pop("OPENAI_API_KEY", None)
    return value


@pytest.fixture
def write_config(dirs: dict[str, Path]):
    def write(base_url: str, **extra: Any) -> Path:
        config: dict[str, Any] = {
            "protocol": "openai",
            "base_url": base_url,
            "model": "scripted-1",
            "max_tokens": 256,
            "retries": 0,
            "timeout": scaled(30),
            "stream": False,
            "budget": {"context_window": 100000},
        }
        config.update(extra)
        path = dirs["config"] / "config.json"
        path.write_bytes(orjson.dumps(config))
        return path

    return write


@pytest.fixture
def plugins(dirs: dict[str, Path]):
    """Select a profile (and disabled modules) resolved at every start through builtin.json."""

    def select(profile: str, disabled: list[str] | None = None) -> None:
        (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": profile, "disabled": disabled or []}))
        (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')

    return select


@pytest.fixture
def i(env: dict[str, str]):
    def run(*args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
        """`i ARGS` with nothing on stdin (/dev/null: nothing is attached), under a scaled guard."""
        return subprocess.run(
            [str(BIN / "i"), *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(timeout),
        )

    return run
