"""The README's first-run lines as written, from a clean configuration, against the scripted model
as an OpenAI-compatible server that reports no window (no /props, no window in /models)."""

from __future__ import annotations

import orjson

from i_scripted import ScriptedModel


def test_init_then_a_task_works_with_the_window_from_inits_catalog(i, dirs, project) -> None:
    assert not (dirs["config"] / "config.json").exists()
    with ScriptedModel([{"text": "hello from the model"}], model_name="gpt-4o-mini") as model:
        init = i("--runtime", "init", "--base-url", model.base_url, "--model", "gpt-4o-mini")
        assert init.returncode == 0, init.stderr
        assert "budget.context_window 128000 from the catalog of well-known models" in init.stderr
        config = orjson.loads((dirs["config"] / "config.json").read_bytes())
        assert config["budget"]["context_window"] == 128000
        # The standard profile, as init wrote it (OPENAI_API_KEY unset: the server is on loopback).
        result = i("-C", str(project), "say hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "hello from the model\n"
    assert "context unknown" not in result.stderr
    assert all(not r.path.endswith("/props") for r in model.requests if r.method == "POST")
