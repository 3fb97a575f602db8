"""Files named by configuration are read only when they are regular files: a FIFO never hangs `i`."""

from __future__ import annotations

import os
from pathlib import Path

import orjson

CONFIG = {"protocol": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}


def _one_line(stderr: bytes) -> str:
    lines = [line for line in stderr.decode().splitlines() if line.strip()]
    assert len(lines) == 1, lines
    assert "Traceback" not in lines[0]
    return lines[0]


def test_a_fifo_in_place_of_config_json_is_refused_in_one_line(run_i, dirs, project: Path) -> None:
    os.mkfifo(dirs["config"] / "config.json")
    # run_i's guard (scaled) turns a hang into a failure rather than a stuck suite.
    result = run_i("-C", str(project), "hello", timeout=30)
    assert result.returncode != 0
    line = _one_line(result.stderr)
    assert "config.json" in line and "not a regular file (a FIFO)" in line


def test_a_fifo_given_as_the_session_file_is_refused_in_one_line(run_i, dirs, project: Path, tmp_path: Path) -> None:
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(CONFIG))
    fifo = tmp_path / "session.json"
    os.mkfifo(fifo)
    result = run_i("-C", str(project), "--session", str(fifo), "hello", timeout=30)
    assert result.returncode != 0
    line = _one_line(result.stderr)
    assert str(fifo) in line and "not a regular file (a FIFO)" in line


def test_config_by_process_substitution_is_refused_with_the_reason(run_i, dirs, project: Path, tmp_path: Path) -> None:
    """`i --runtime compact --config <(…)` hands `i` a pipe: refused, never read in part or waited on."""
    fifo = tmp_path / "63"
    os.mkfifo(fifo)
    result = run_i("--runtime", "compact", "--config", str(fifo), "-C", str(project), "--session-name", "s", timeout=30)
    assert result.returncode != 0
    assert "not a regular file (a FIFO)" in _one_line(result.stderr)
