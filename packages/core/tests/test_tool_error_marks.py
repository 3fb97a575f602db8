"""A failed tool call is marked on every wire: ``_is_error`` in the history, ``tool_result.is_error``
on Anthropic, the ``error: `` text marker on Chat Completions and Responses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core.tool_calls import tool_message
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

_I = [sys.executable, "-m", "i_core"]
WORKER = Path(__file__).parent / "workers" / "failing_tool_worker.py"
LOOKUP = {
    "name": "lookup",
    "description": "look a record up",
    "parameters": {"type": "object", "properties": {"key": {"type": "string"}}},
    "exec": [sys.executable, str(WORKER)],
}


def _run(dirs, project: Path, tmp_path: Path, protocol: str) -> tuple[ScriptedModel, dict]:
    manifest = tmp_path / "manifest.json"
    hooks = []
    if protocol == "responses":  # the wire transform is a bundled module
        responses = [sys.executable, "-m", "i_core", "--runtime", "worker", "responses"]
        hooks = [{"events": ["before_request", "after_response"], "exec": responses, "module": "responses"}]
    manifest.write_bytes(orjson.dumps({"tools": [LOOKUP], "hooks": hooks}))
    script = [{"tool_calls": [{"name": "lookup", "arguments": {"key": "k1"}, "id": "call_1"}]}, {"text": "noted"}]
    with ScriptedModel(script) as model:
        base = model.root_url if protocol == "anthropic" else model.base_url
        config = {"protocol": protocol, "base_url": base, "model": "scripted-1", "stream": False, "timeout": scaled(20)}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        done = subprocess.run(
            [*_I, "-C", str(project), "--yolo", "--manifest", str(manifest), "--session-name", "s", "look k1 up"],
            env=dict(os.environ),
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=scaled(60),
        )
    assert done.returncode == 0, done.stderr
    saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())
    (tool,) = [m for m in saved["messages"] if m.get("role") == "tool"]
    return model, tool


@pytest.mark.parametrize("protocol", ["openai", "anthropic", "responses"])
def test_a_tool_result_with_is_error_is_marked_in_the_history_and_on_the_wire(
    dirs, project: Path, tmp_path: Path, protocol: str
) -> None:
    model, tool = _run(dirs, project, tmp_path, protocol)
    assert tool == {"role": "tool", "tool_call_id": "call_1", "content": "error: no such record: k1", "_is_error": True}
    body = model.requests[1].body
    wire = orjson.dumps(body).decode()
    assert "error: no such record: k1" in wire
    assert "_is_error" not in wire  # a history field, never sent as such
    if protocol == "anthropic":
        blocks = [b for m in body["messages"] for b in (m["content"] if isinstance(m["content"], list) else [])]
        (result,) = [b for b in blocks if b.get("type") == "tool_result"]
        assert result["is_error"] is True


def test_a_success_is_unmarked_and_an_error_keeps_a_marker_it_already_has() -> None:
    assert tool_message("c", "fine", False) == {"role": "tool", "tool_call_id": "c", "content": "fine"}
    assert tool_message("c", "error: bad", True)["content"] == "error: bad"
    assert tool_message("c", "bad", True)["content"] == "error: bad"
    kept = "drew a cat\n\nerror: tool pics returned 2 images, over the limit"
    assert tool_message("c", kept, True)["content"] == kept  # the core's own marker line is enough
