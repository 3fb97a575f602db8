"""The public surface the agent loop uses: schemas, free tools, unknown tools, context defaults."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from i_core.tools import BUILTIN_NAMES, BUILTIN_SCHEMAS, FREE_TOOLS, ToolContext, ToolError, execute, prepare

ALL = {"read", "write", "edit", "glob", "search", "shell", "view_image", "recall"}


def test_schemas_cover_the_eight_tools() -> None:
    assert {schema["name"] for schema in BUILTIN_SCHEMAS} == ALL == BUILTIN_NAMES
    for schema in BUILTIN_SCHEMAS:
        assert set(schema) == {"name", "description", "parameters"}
        params = schema["parameters"]
        assert params["type"] == "object" and params["additionalProperties"] is False
        assert set(params["required"]) <= set(params["properties"])
    json.dumps(BUILTIN_SCHEMAS)


def test_schema_properties_match_what_prepare_accepts(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path)
    for schema in BUILTIN_SCHEMAS:
        bogus = {name: None for name in schema["parameters"]["properties"]}
        bogus["not_a_parameter"] = 1
        with pytest.raises(ToolError, match=rf"{schema['name']}: unknown argument\(s\): not_a_parameter; expected"):
            prepare(schema["name"], bogus, ctx)


def test_free_tools() -> None:
    assert frozenset({"read", "view_image", "recall"}) == FREE_TOOLS


def test_unknown_tool(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="unknown tool 'rm'; built-in tools: read, write"):
        prepare("rm", {}, ToolContext(tmp_path))


def test_context_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("I_APPROVAL_TOKEN", "t")
    monkeypatch.chdir(tmp_path)
    ctx = ToolContext(Path("."))
    assert ctx.workspace == tmp_path and ctx.workspace.is_absolute()
    assert ctx.shell_timeout == 120.0 and ctx.max_output_chars == 200_000
    assert "I_APPROVAL_TOKEN" not in ctx.env and ctx.env.get("PATH") == os.environ["PATH"]


def test_prepare_does_not_touch_disk_for_writes(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path)
    prepare("write", {"path": "new/file.txt", "content": "x"}, ctx)
    prepare("shell", {"command": "touch made"}, ctx)
    assert list(tmp_path.iterdir()) == []


def test_summaries(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path)
    assert prepare("read", {"path": "a.txt"}, ctx).summary == "read a.txt"
    assert prepare("read", {"path": "a.txt", "offset": 5}, ctx).summary == "read a.txt from line 5"
    assert prepare("glob", {"pattern": "**/*.py"}, ctx).summary == "glob **/*.py in ."
    assert prepare("search", {"pattern": "x", "glob": "*.py"}, ctx).summary == "search 'x' in . (*.py)"
    outside = prepare("read", {"path": "/etc/hostname"}, ctx)
    assert outside.summary == "read /etc/hostname" and outside.path == Path("/etc/hostname")


def test_os_errors_become_tool_errors(tmp_path: Path) -> None:
    mem = Path("/proc/self/mem")
    if not mem.exists():
        pytest.skip("needs /proc/self/mem (a regular file whose read fails)")
    ctx = ToolContext(tmp_path)
    with pytest.raises(ToolError, match="read: /proc/self/mem: Input/output error"):
        execute(prepare("read", {"path": str(mem)}, ctx), ctx)


def test_special_files_are_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    ctx = ToolContext(tmp_path)
    with pytest.raises(ToolError, match="read: pipe: not a regular file"):
        execute(prepare("read", {"path": "pipe"}, ctx), ctx)
    with pytest.raises(ToolError, match="write: pipe: not a regular file"):
        prepare("write", {"path": "pipe", "content": ""}, ctx)
    with pytest.raises(ToolError, match="search: pipe: not a regular file or directory"):
        execute(prepare("search", {"pattern": "x", "path": "pipe"}, ctx), ctx)
    with pytest.raises(ToolError, match="view_image: pipe: not a regular file"):
        execute(prepare("view_image", {"path": "pipe"}, ctx), ctx)
    with pytest.raises(ToolError, match="edit: pipe: not a regular file"):
        prepare("edit", {"path": "pipe", "old_string": "a", "new_string": "b"}, ctx)


def test_the_reserved_names_are_the_built_in_tools() -> None:
    from i_core.events import BUILTIN_TOOLS

    # manifest.py refuses a tool entry with one of these names; the schemas are what the model sees.
    assert set(BUILTIN_TOOLS) == BUILTIN_NAMES
