"""Every worker in examples/ runs through the real core (the `i` command, the scripted model),
and passes `i --runtime check` for the module it implements."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import orjson
import pytest

from i_protocol.testing import scaled
from i_scripted import ScriptedModel

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
FILLER = "Please keep the whole build log in mind while you work on this. " * 30
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


@pytest.fixture
def env(env, monkeypatch):
    """The e2e environment with this interpreter first on PATH: the manifests run `python3`."""
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    return env


def bind(dirs, module: str, example: str) -> None:
    """Write bindings.json from the example's binding.json, with its real absolute path."""
    template = (EXAMPLES / example / "binding.json").read_text()
    text = template.replace("/ABSOLUTE/PATH/TO/examples", str(EXAMPLES))
    assert json.loads(text)[module]["exec"][0].startswith(str(EXAMPLES))
    (dirs["config"] / "bindings.json").write_text(text)


def session(project: Path, name: str) -> list[dict]:
    return orjson.loads((project / ".i" / "sessions" / f"{name}.json").read_bytes())["messages"]


def test_word_count_tool(i, write_config, project):
    steps = [{"tool_calls": [{"name": "word_count", "arguments": {"text": "one two three four"}}]}, {"text": "4 words"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        manifest = str(EXAMPLES / "word_count" / "manifest.json")
        result = i("-C", str(project), "--manifest", manifest, "--yolo", "count the words")
    assert result.returncode == 0, result.stderr
    assert "word_count" in [t["function"]["name"] for t in model.requests[0].body["tools"]]
    tool = next(m for m in model.requests[1].body["messages"] if m["role"] == "tool")
    assert tool["content"] == "4"


def test_approval_policy_denies_and_allows(i, write_config, project):
    steps = [
        {"tool_calls": [{"name": "shell", "arguments": {"command": "rm -rf build"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "ls"}}]},
        {"text": "done"},
    ]
    (project / "build").mkdir()
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        manifest = str(EXAMPLES / "approval_policy" / "manifest.json")
        result = i("-C", str(project), "--manifest", manifest, "clean up")
    assert result.returncode == 0, result.stderr
    denied = [m for m in model.requests[1].body["messages"] if m["role"] == "tool"][-1]["content"]
    allowed = [m for m in model.requests[2].body["messages"] if m["role"] == "tool"][-1]["content"]
    assert "denied" in denied.lower() and (project / "build").is_dir()
    assert "README.md" in allowed  # ls ran without asking (no TTY, no --yolo)


def test_stdlib_compactor_compacts_a_session(i, write_config, plugins, project, dirs):
    plugins("compact")
    bind(dirs, "compact", "stdlib_compactor")
    with ScriptedModel([{"text": f"answer {n}: {FILLER}"} for n in range(3)]) as model:
        write_config(model.base_url)
        for n in range(3):
            assert i("-C", str(project), "--session-name", "s", f"turn {n}: {FILLER}").returncode == 0
    before = session(project, "s")
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
    assert result.returncode == 0, result.stdout + result.stderr
    after = session(project, "s")
    assert len(after) < len(before) and after[-2:] == before[-2:]
    assert "Earlier requests:" in after[1]["content"] and "turn 0" in after[1]["content"]


@needs_node
def test_node_prompt_replaces_the_prompts_module(i, write_config, plugins, project, dirs):
    plugins("standard", disabled=["web", "memory", "cache", "compact", "budget", "skills", "approval"])
    bind(dirs, "prompts", "node_prompt")
    with ScriptedModel([{"text": "hello"}]) as model:
        write_config(model.base_url)
        result = i("-C", str(project), "hi")
    assert result.returncode == 0, result.stderr
    system = model.requests[0].body["messages"][0]["content"]
    assert system.endswith("House rules: answer in British English; never push to the main branch.")
    assert str(project) in system  # the core's default prompt is kept, workspace filled in


@pytest.mark.parametrize(
    ("module", "argv"),
    [
        ("compact", ["stdlib_compactor/compactor.py"]),
        ("approval", ["python3", "approval_policy/policy.py"]),
        pytest.param("prompts", ["node_prompt/house_prompt.js"], marks=needs_node),
    ],
)
def test_examples_pass_the_check(i, module, argv):
    argv = [str(EXAMPLES / a) if "/" in a else a for a in argv]
    result = i("--runtime", "check", module, "--json", "--exec", *argv, timeout=300)
    report = json.loads(result.stdout)
    assert result.returncode == 0, [c for c in report["checks"] if not c["passed"]]
    assert report["passed"] and len(report["checks"]) >= 9


TUTORIAL = EXAMPLES.parent / "docs" / "writing-a-worker.md"
_MARKED = re.compile(r"<!-- (file: (?P<path>\S+)|run) -->\n```\w*\n(?P<body>.*?)```", re.S)


def tutorial_blocks() -> list[tuple[str, str | None, str]]:
    """The tutorial's marked blocks, in order: ("file", path, text) and ("run", None, text)."""
    return [("file" if m["path"] else "run", m["path"], m["body"]) for m in _MARKED.finditer(TUTORIAL.read_text())]


def expected_in(expected: str, output: str) -> bool:
    """A shown output line is in the output; "…" stands for anything, whitespace runs for one."""
    fragments = [" ".join(part.split()) for part in expected.split("…") if part.strip()]
    pattern = ".*".join(re.escape(fragment) for fragment in fragments)
    return any(re.search(pattern, " ".join(line.split())) for line in output.splitlines())


def test_the_tutorial_runs_as_written(env, tmp_path):
    blocks = tutorial_blocks()
    assert [kind for kind, _, _ in blocks].count("run") >= 3 and any(
        path == "team_prompt/pyproject.toml" for _, path, _ in blocks
    )
    for kind, path, body in blocks:
        if kind == "file":
            assert path is not None
            (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
            (tmp_path / path).write_text(body)
            continue
        command, shown = None, []
        for line in [*body.splitlines(), "$ "]:
            if line.startswith("$ "):
                if command is not None:
                    done = subprocess.run(
                        ["bash", "-c", command],
                        cwd=tmp_path,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        capture_output=True,
                        text=True,
                        timeout=scaled(300),
                    )
                    assert done.returncode == 0, (command, done.stdout, done.stderr)
                    for expected in shown:
                        assert expected_in(expected, done.stdout), (command, expected, done.stdout)
                command, shown = line[2:].strip() or None, []
            elif line.strip():
                shown.append(line)
    # Section 8: the packaged script names a function that exists.
    project = tomllib.loads((tmp_path / "team_prompt" / "pyproject.toml").read_text())["project"]
    module, function = project["scripts"]["team-prompt"].split(":")
    done = subprocess.run(
        [sys.executable, "-c", f"import {module}; print(callable({module}.{function}))"],
        cwd=tmp_path / "team_prompt",
        capture_output=True,
        text=True,
    )
    assert done.stdout.strip() == "True", done.stderr
