"""An image with no planned cost (no budget.image_tokens) is left out of the request, never fatal:
the model reads a note, the user a one-time hint, the session keeps the image for later."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson

from i_core.unplanned_images import NOTE, leave_out
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 16


def _config(dirs, base_url: str, budget: dict) -> None:
    config = {"protocol": "openai", "base_url": base_url, "model": "scripted-1", "stream": False, "timeout": scaled(20)}
    (dirs["config"] / "config.json").write_bytes(orjson.dumps({**config, "budget": budget}))


def _manifest(tmp_path: Path) -> Path:
    """A budget worker (the test's fake one) on context_budget: images are planned only with a budget."""
    behaviour = tmp_path / "behaviour.json"
    behaviour.write_text("{}")
    budget = [sys.executable, str(Path(__file__).parent / "workers" / "fake_compactor.py"), str(behaviour)]
    manifest = tmp_path / "manifest.json"
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["context_budget"], "exec": budget}]}))
    return manifest


def _i(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    manifest = _manifest(project.parent)
    return subprocess.run(
        [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest), "--session-name", "s", *args],
        env=dict(os.environ),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=scaled(60),
    )


def _images(request) -> int:
    return orjson.dumps(request.body).count(b"data:image/png;base64,")


def test_an_unplanned_image_is_left_out_with_a_note_and_sent_once_its_cost_is_set(dirs, project: Path) -> None:
    (project / "shot.png").write_bytes(PNG)
    steps = [
        {"tool_calls": [{"name": "view_image", "arguments": {"path": "shot.png"}, "id": "call_1"}]},
        {"text": "I could not see it"},
        {"text": "now I see it"},
    ]
    with ScriptedModel(steps) as model:
        _config(dirs, model.base_url, {"context_window": 100_000})
        first = _i(project, "--json", "look at shot.png")
        assert first.returncode == 0, first.stderr
        report = orjson.loads(first.stdout)
        assert report["answer"] == "I could not see it" and report["images_left_out"] == 1
        assert first.stderr.count("Set budget.image_tokens") == 1
        assert _images(model.requests[1]) == 0 and NOTE in orjson.dumps(model.requests[1].body).decode()
        saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())
        assert b"data:image/png;base64," in orjson.dumps(saved)  # the session keeps the image
        _config(dirs, model.base_url, {"context_window": 100_000, "image_tokens": 1600})
        second = _i(project, "--json", "and now?")
    assert second.returncode == 0, second.stderr
    assert orjson.loads(second.stdout)["images_left_out"] == 0
    assert _images(model.requests[2]) == 1 and NOTE not in orjson.dumps(model.requests[2].body).decode()


def test_leave_out_keeps_the_history_as_it_is_when_the_cost_is_planned() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": [{"type": "text", "text": "x"}, image]}]
    assert leave_out(history, {"image_tokens": 100}) == (history, 0)
    sent, count = leave_out(history, {})
    assert count == 1 and sent[1]["content"][1]["text"] == NOTE and history[1]["content"][1] is image
    assert leave_out(history[:1], {}) == (history[:1], 0)
