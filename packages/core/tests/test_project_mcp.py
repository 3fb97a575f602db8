"""A project's .mcp.json is passed on only once approved for this workspace and this content."""

from __future__ import annotations

import hashlib

import orjson

from i_core.project_mcp import approvals_path, project_context

WORKSPACE_ID = "0b7a5f0e-5d7c-4e0c-9d0e-1f2a3b4c5d6e"


def _write(project, command: str) -> str:
    content = orjson.dumps({"mcpServers": {"tools": {"command": command, "args": ["--serve"]}}})
    (project / ".mcp.json").write_bytes(content)
    return hashlib.sha256(content).hexdigest()


def test_a_project_file_asks_once_then_is_used_and_a_changed_file_asks_again(tmp_path):
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    digest = _write(project, "./bin/tools")
    questions: list[str] = []
    notes: list[str] = []

    def ask(question: str) -> bool:
        questions.append(question)
        return True

    found = project_context(str(project), WORKSPACE_ID, str(data), ask, notes.append)
    assert found == {"path": str(project / ".mcp.json"), "sha256": digest}
    assert "tools: ./bin/tools --serve" in questions[0]
    # Approved: asked no more, not even in a run that cannot ask.
    assert project_context(str(project), WORKSPACE_ID, str(data), None, notes.append) == found
    assert len(questions) == 1
    # The approval is kept under the data directory, never in the project.
    assert (data / "mcp-approvals.json").exists() and sorted(p.name for p in project.iterdir()) == [".mcp.json"]
    assert approvals_path(str(data)) == str(data / "mcp-approvals.json")
    # A changed file is not used until it is approved again.
    _write(project, "./bin/other")
    assert project_context(str(project), WORKSPACE_ID, str(data), None, notes.append) is None
    assert "not used" in notes[-1] and "approve" in notes[-1]
    assert project_context(str(project), WORKSPACE_ID, str(data), lambda _: False, notes.append) is None
    assert len(questions) == 1 and notes[-1].endswith("is not used (not approved)")


def test_another_workspace_is_not_approved_by_this_ones_approval(tmp_path):
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    _write(project, "x")
    assert project_context(str(project), WORKSPACE_ID, str(data), lambda _: True, print) is not None
    other = "11111111-2222-4333-8444-555555555555"
    assert project_context(str(project), other, str(data), None, lambda _: None) is None


def test_no_project_file_means_nothing_to_ask(tmp_path):
    asked: list[str] = []
    assert project_context(str(tmp_path), WORKSPACE_ID, str(tmp_path / "d"), asked.append, print) is None
    assert asked == []
