"""A typo in a worker's config is found early: by `i --runtime check` without a session, and at the
worker's own first request in a session (issue 37, item 3), with the real installed workers."""

from __future__ import annotations

import json

import orjson

from i_scripted import ScriptedModel

TYPO = {"keep_recent": 2, "mode": "lcoal"}


def test_check_names_compact_json_and_mode_without_a_session(i, write_config, plugins, dirs):
    plugins("compact")
    write_config("http://127.0.0.1:9/v1")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps(TYPO))
    result = i("--runtime", "check")
    assert result.returncode == 3, result.stdout + result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("config compact:")]
    assert f"invalid, {dirs['config'] / 'compact.json'}: mode must be one of model, local" in line
    budget = [line for line in result.stdout.splitlines() if line.startswith("config budget:")]
    assert budget == [f"config budget: ok, {dirs['config'] / 'config.json'}"]
    versions = json.loads(i("--runtime", "versions", "--json").stdout)
    rows = {row["module"]: row for row in versions["modules"]}
    assert rows["compact"]["config"] == "invalid" and "mode" in rows["compact"]["config_detail"]


def test_the_compactors_first_request_fails_naming_the_file_and_the_field(i, write_config, plugins, project, dirs):
    plugins("compact")
    with ScriptedModel([{"text": f"answer {n}"} for n in range(3)]) as model:
        write_config(model.base_url)
        for n in range(3):
            assert i("-C", str(project), "--session-name", "s", f"turn {n}").returncode == 0
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps(TYPO))
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
    assert result.returncode == 3, result.stderr
    assert f"{dirs['config'] / 'compact.json'}: mode must be one of model, local" in result.stderr
    assert "Traceback" not in result.stderr
