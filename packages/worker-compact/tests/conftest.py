"""Shared fixtures; puts this folder on sys.path so tests can import ``builders``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, str]:
    paths = {key: str(tmp_path / key) for key in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
    for value in paths.values():
        Path(value).mkdir()
    return paths
