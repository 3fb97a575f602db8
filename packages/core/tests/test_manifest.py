from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from i_core.errors import ConfigError
from i_core.manifest import parse_manifest

SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def tool(name="my_tool", **extra):
    return {"name": name, "description": "d", "parameters": SCHEMA, "exec": [sys.executable, "w.py"], **extra}


def test_valid_manifest_resolves_exec_and_cwd(tmp_path):
    manifest = parse_manifest(
        {"tools": [tool()], "hooks": [{"events": ["before_turn", "*"], "exec": ["python3"]}]}, tmp_path, "m.json"
    )
    entry = manifest.tools[0]
    assert entry.exec.cwd == str(tmp_path.resolve())
    assert entry.exec.argv == (sys.executable, "w.py")
    assert os.path.isabs(manifest.hooks[0].exec.argv[0])  # bare name found on PATH
    # The model sees only name, description and parameters.
    assert manifest.model_tools() == [{"name": "my_tool", "description": "d", "parameters": SCHEMA}]


def test_program_with_separator_resolves_against_the_final_cwd(tmp_path):
    (tmp_path / "plugins").mkdir()
    script = tmp_path / "plugins" / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    manifest = parse_manifest(
        {"hooks": [{"events": ["finish"], "exec": ["./run.sh", "--x"], "cwd": "plugins"}]}, tmp_path, "m.json"
    )
    assert manifest.hooks[0].exec.argv == (str(tmp_path.resolve() / "plugins" / "run.sh"), "--x")
    assert manifest.hooks[0].exec.cwd == str(tmp_path.resolve() / "plugins")


@pytest.mark.parametrize(
    "raw, message",
    [
        ({"tools": [tool("bad name")]}, "tools[0].name must be 1-64 characters"),
        ({"tools": [tool("x" * 65)]}, "1-64 characters"),
        ({"tools": [tool("")]}, "1-64 characters"),
        ({"tools": [tool("read")]}, "would shadow the built-in tool"),
        ({"tools": [tool("shell")]}, "would shadow the built-in tool"),
        ({"tools": [tool(), tool()]}, "tools[1]: tool 'my_tool' is declared twice"),
        ({"tools": [tool(parameters={"type": "array"})]}, "parameters must be a JSON schema object"),
        ({"tools": [tool(exec="python3 w.py")]}, "exec must be an argv array, not a shell string"),
        ({"tools": [tool(exec=[])]}, "exec must be a non-empty array"),
        ({"tools": [tool(exec=["no-such-program-xyz"])]}, "'no-such-program-xyz' was not found on PATH"),
        ({"tools": [tool(exec=["./missing.sh"])]}, "is not an executable file"),
        ({"tools": [tool(cwd="nowhere")]}, "cwd"),
        ({"hooks": [{"events": [], "exec": ["python3"]}]}, "events must be a non-empty array"),
        ({"hooks": [{"events": ["before_turns"], "exec": ["python3"]}]}, "unknown event 'before_turns'"),
        ({"hooks": [{"events": ["finish"]}]}, "exec must be a non-empty array"),
        ({"provider": "python3"}, "provider must be an object"),
        ({"tools": {}}, "tools must be an array"),
        ({"plugins": []}, "unknown top-level field(s): plugins"),
    ],
)
def test_invalid_manifests_get_clear_errors(tmp_path, raw, message):
    with pytest.raises(ConfigError) as info:
        parse_manifest(raw, tmp_path, "m.json")
    assert message in str(info.value)
    assert str(info.value).startswith("m.json")


def test_hooks_keep_manifest_order_and_star_matches_everything(tmp_path):
    manifest = parse_manifest(
        {
            "hooks": [
                {"events": ["finish"], "exec": ["python3", "a"]},
                {"events": ["*"], "exec": ["python3", "b"]},
                {"events": ["before_turn", "finish"], "exec": ["python3", "c"]},
            ]
        },
        tmp_path,
        "m.json",
    )
    assert [h.exec.argv[1] for h in manifest.hooks_for("finish")] == ["a", "b", "c"]
    assert [h.exec.argv[1] for h in manifest.hooks_for("before_turn")] == ["b", "c"]
    assert [h.exec.argv[1] for h in manifest.hooks_for("after_save")] == ["b"]


def test_execs_are_deduplicated_by_argv_and_cwd(tmp_path):
    manifest = parse_manifest(
        {
            "tools": [tool("a"), tool("b")],
            "hooks": [
                {"events": ["finish"], "exec": [sys.executable, "w.py"]},
                {"events": ["finish"], "exec": [sys.executable, "v.py"]},
            ],
        },
        tmp_path,
        "m.json",
    )
    assert [e.argv[1] for e in manifest.execs()] == ["w.py", "v.py"]


def test_cwd_must_be_a_directory(tmp_path: Path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="is not a directory"):
        parse_manifest({"tools": [tool(cwd="file")]}, tmp_path, "m.json")
