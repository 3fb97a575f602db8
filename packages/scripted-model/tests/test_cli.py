"""The command line: ``python -m i_scripted`` prints the base URL, serves, records, enforces a window."""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import orjson
import pytest
from scripted_http import PROSE, chat, post

from i_protocol.testing import scaled


def test_the_command_line_prints_the_base_url_serves_and_records(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(orjson.dumps([{"text": "from the CLI"}]).decode())
    record = tmp_path / "requests.ndjson"
    process = subprocess.Popen(
        [sys.executable, "-m", "i_scripted", "--script", str(script), "--port", "0", "--record", str(record)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        base_url = process.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:") and base_url.endswith("/v1")
        status, raw = post(
            base_url.removesuffix("/v1"),
            "/v1/chat/completions",
            chat("openai", "hi"),
            {"authorization": "Bearer sk-cli"},
        )
        assert status == 200
        assert orjson.loads(raw)["choices"][0]["message"]["content"] == "from the CLI"
    finally:
        process.terminate()
        process.wait(timeout=scaled(10))
    (line,) = record.read_bytes().splitlines()
    recorded = orjson.loads(line)
    assert recorded["path"] == "/v1/chat/completions" and recorded["headers"]["authorization"] == "<redacted>"


def test_the_command_line_refuses_a_bad_script(tmp_path: Path) -> None:
    script = tmp_path / "bad.json"
    script.write_text('[{"txet": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "i_scripted", "--script", str(script)],
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    assert result.returncode == 2
    assert "cannot load" in result.stderr and "unknown field(s) txet" in result.stderr
    assert result.stdout == ""


def test_the_command_line_enforces_a_context_window(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text('[{"text": "fits"}]')
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "i_scripted",
            "--script",
            str(script),
            "--context-window",
            "50",
            "--context-style",
            "llamacpp",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        root = process.stdout.readline().strip().removesuffix("/v1")
        with urllib.request.urlopen(root + "/props", timeout=scaled(10)) as answer:
            assert orjson.loads(answer.read())["default_generation_settings"]["n_ctx"] == 50
        request = urllib.request.Request(
            root + "/v1/chat/completions", orjson.dumps(chat("openai", PROSE)), {"content-type": "application/json"}
        )
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(request, timeout=scaled(10))
        assert refused.value.code == 400
        assert orjson.loads(refused.value.read())["error"]["type"] == "exceed_context_size_error"
    finally:
        process.terminate()
        process.wait(timeout=scaled(10))
    result = subprocess.run(
        [sys.executable, "-m", "i_scripted", "--script", str(script), "--context-window", "0"],
        capture_output=True,
        text=True,
        timeout=scaled(30),
    )
    assert result.returncode == 2 and "--context-window must be a positive" in result.stderr
