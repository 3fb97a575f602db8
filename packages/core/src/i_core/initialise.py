"""`i --runtime init`: the default configuration files, never overwriting an existing one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

DEFAULT_CONFIG: dict[str, Any] = {
    "protocol": "openai",
    "base_url": "http://127.0.0.1:8080/v1",
    "model": "gpt-4o-mini",
    "api_key_env": "OPENAI_API_KEY",
    "max_tokens": 4096,
    "use_max_tokens": False,
    "io_limit_bytes": 1048576,
    "budget": {
        "context_window": 128000,
        "safety_ratio": 0.02,
        "tool_output_ratio": 0.02,
    },
}

DEFAULT_FILES: dict[str, dict[str, Any]] = {
    "config.json": DEFAULT_CONFIG,
    "plugins.json": {"profile": "standard", "disabled": []},
    "bindings.json": {},
    "builtin.json": {"builtin_profile": "configured", "tools": []},
}


def initialise(config_dir: Path) -> list[tuple[Path, bool]]:
    """Write each default file that does not exist yet; returns (path, created) pairs."""
    config_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for name, content in DEFAULT_FILES.items():
        path = config_dir / name
        results.append((path, _create_exclusive(path, orjson.dumps(content, option=orjson.OPT_INDENT_2) + b"\n")))
    return results


def _create_exclusive(path: Path, data: bytes) -> bool:
    # Written aside, then hard-linked into place: the link fails if the file exists, so a
    # user's file is never overwritten even by a concurrent init, and no reader sees half a file.
    if path.exists():
        return False
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    tmp.write_bytes(data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        tmp.unlink()
    return True
