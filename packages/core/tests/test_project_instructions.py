"""AGENTS.md (CLAUDE.md as the fallback name) from the workspace up to the git root, into the
system prompt of a new session; ``i --runtime paths`` lists the files read."""

from __future__ import annotations

import subprocess
import sys

import orjson

from i_core.system_prompt import MAX_INSTRUCTION_CHARS, instruction_files, project_instructions
from i_protocol.testing import scaled
from i_scripted import ScriptedModel


def test_files_from_the_git_root_down_to_the_workspace_agents_md_before_claude_md(tmp_path) -> None:
    outside = tmp_path / "AGENTS.md"
    outside.write_text("above the git root: never read")
    root = tmp_path / "repo"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("root rules")
    (root / "CLAUDE.md").write_text("not read: AGENTS.md is there")
    sub = root / "pkg" / "deep"
    sub.mkdir(parents=True)
    (root / "pkg" / "CLAUDE.md").write_text("pkg rules")
    (sub / "AGENTS.md").write_text("")  # empty: listed, nothing to add
    assert instruction_files(str(sub)) == [root / "AGENTS.md", root / "pkg" / "CLAUDE.md", sub / "AGENTS.md"]
    text = project_instructions(str(sub))
    assert text.index("root rules") < text.index("pkg rules")
    assert "never read" not in text and "not read: AGENTS.md" not in text


def test_without_a_git_root_only_the_workspace_is_read_and_a_long_file_is_cut_saying_so(tmp_path) -> None:
    (tmp_path / "AGENTS.md").write_text("parent")
    work = tmp_path / "work"
    work.mkdir()
    assert instruction_files(str(work)) == []
    (work / "AGENTS.md").write_text("x" * (MAX_INSTRUCTION_CHARS + 10))
    text = project_instructions(str(work))
    assert "x" * MAX_INSTRUCTION_CHARS in text and "x" * (MAX_INSTRUCTION_CHARS + 1) not in text
    assert "10 more characters of AGENTS.md were cut" in text


def test_instructions_reach_the_system_message_with_the_prompts_worker_and_paths_lists_them(
    dirs, project, run_i, write_manifest
) -> None:
    (project / ".git").mkdir()
    (project / "CLAUDE.md").write_text("MARKER-CLAUDE-7")
    config = {"protocol": "openai", "base_url": "", "model": "m", "stream": False, "retries": 0}
    prompts = [sys.executable, "-m", "i_core", "--runtime", "worker", "prompts"]
    manifest = write_manifest({"hooks": [{"events": ["system_prompt"], "exec": prompts}]})
    with ScriptedModel([{"text": "ok"}]) as model:
        config["base_url"] = model.base_url
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        result = subprocess.run(
            [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest), "hi"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 0, result.stderr
    system = model.requests[0].body["messages"][0]
    assert system["role"] == "system" and "MARKER-CLAUDE-7" in system["content"]
    paths = orjson.loads(run_i("--runtime", "paths", "-C", str(project)).stdout)
    assert [p.rsplit("/", 1)[-1] for p in paths["instructions"]] == ["CLAUDE.md"]
