"""Fixtures: isolated directories and a real worker process per test."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# --import-mode=importlib puts nothing on sys.path; the shared harness sits next to this file.
sys.path.insert(0, str(Path(__file__).parent))

from checkpoint_harness import Env

from i_protocol.host import WorkerProcess


@pytest.fixture
def env(tmp_path: Path) -> Iterator[Env]:
    environment = Env(tmp_path)
    yield environment
    for worker in environment.workers:
        worker.close()


@pytest.fixture
def worker(env: Env) -> WorkerProcess:
    return env.spawn()
