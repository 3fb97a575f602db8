"""Shared fixtures; puts this folder on sys.path so tests can import ``core_texts``."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # so tests can import ``core_texts``

WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


def make_history(turns: int = 3, size: int = 200) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."}]
    for turn in range(turns):
        history.append({"role": "user", "content": f"question {turn} " + "q" * size})
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{turn}",
                        "type": "function",
                        "function": {"name": "read", "arguments": '{"path": "a.txt"}'},
                    }
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": "r" * size})
        history.append({"role": "assistant", "content": f"answer {turn} " + "a" * size})
    return history


def make_data(history: list[dict[str, Any]] | None = None, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": "test-model",
        "budget": {"context_window": 100_000},
        "max_tokens": 4_000,
        "history": make_history() if history is None else history,
        "tools": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
        "pending_tool_calls": 0,
        "compact": True,
        "usage": None,
        "cut": None,
    }
    data.update(overrides)
    return copy.deepcopy(data)


@pytest.fixture
def data() -> dict[str, Any]:
    return make_data()


@pytest.fixture
def exe() -> str:
    path = Path(sys.executable).parent / "i-budget"
    assert path.exists(), f"console script not installed next to {sys.executable}"
    return str(path)


@pytest.fixture
def dirs(tmp_path: Path) -> dict[str, str]:
    paths = {}
    for key in ("config_dir", "data_dir", "cache_dir", "runtime_dir"):
        folder = tmp_path / key
        folder.mkdir()
        paths[key] = str(folder)
    return paths


@pytest.fixture
def build():
    """make_data as a fixture: tests cannot import conftest under --import-mode=importlib."""
    return make_data


@pytest.fixture
def history_of():
    return make_history
