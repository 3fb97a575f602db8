from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, str]:
    """Four isolated platform directories under tmp_path."""
    result = {}
    for key in ("config_dir", "data_dir", "cache_dir", "runtime_dir"):
        path = tmp_path / key.replace("_dir", "")
        path.mkdir()
        result[key] = str(path)
    return result


@pytest.fixture
def worker_env(dirs: dict[str, str]) -> dict[str, str]:
    """A minimal child environment pointing the I_*_DIR variables at the temp dirs."""
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    names = {
        "config_dir": "I_CONFIG_DIR",
        "data_dir": "I_DATA_DIR",
        "cache_dir": "I_CACHE_DIR",
        "runtime_dir": "I_RUNTIME_DIR",
    }
    for key, value in dirs.items():
        env[names[key]] = value
    return env


@pytest.fixture
def fixture_argv():
    """argv of the well-behaved fixture worker (extra arguments appended)."""
    return lambda *extra: [sys.executable, str(HERE / "fixture_worker.py"), *extra]


@pytest.fixture
def misbehaving_argv():
    """argv of a raw worker that breaks the protocol in the given mode."""
    return lambda mode: [sys.executable, str(HERE / "misbehaving_worker.py"), mode]
