"""Lazy start and the shared bundled process, with real worker processes.

A session starts, together, only the workers of the events up to its first model request (and the
``tools_list`` subscribers, whose tools the first request must offer); a tool's worker starts at
its first call, once. The bundled modules a profile selects share one process
(`i --runtime worker approval,prompts,skills`), each still answering with its own config, and a
binding replaces only the module it names.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core.bundled.together import Together
from i_core.errors import ConfigError
from i_core.executables import bundle, core_worker_argv
from i_core.pool import worker_environment
from i_core.runtime import Runtime
from i_protocol import Worker, paths_from_env
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

GROUP = core_worker_argv("approval,prompts,skills")

MARKED_WORKER = """
import os, sys
from i_protocol import Worker
with open(sys.argv[1], "a") as marker:
    marker.write(f"{os.getpid()}\\n")
worker = Worker("marked", "0")

@worker.tool("mark")
def mark(arguments, request):
    return "marked"

@worker.hook("before_turn", "compact_plan")
def hook(data, request):
    return data

sys.exit(worker.main([]))
"""


def _builtin(config_dir: Path, profile: str, **files: object) -> None:
    (config_dir / "plugins.json").write_bytes(orjson.dumps({"profile": profile, "disabled": []}))
    (config_dir / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
    for name, content in files.items():
        (config_dir / f"{name}.json").write_bytes(orjson.dumps(content))


def _marked(tmp_path: Path, name: str) -> tuple[list[str], Path]:
    script = tmp_path / f"{name}.py"
    script.write_text(MARKED_WORKER)
    marker = tmp_path / f"{name}.starts"
    return [sys.executable, str(script), str(marker)], marker


def _starts(marker: Path) -> int:
    return len(marker.read_text().split()) if marker.exists() else 0


# -- which modules share the bundled process ------------------------------------------------


def test_a_disabled_bundled_module_leaves_the_shared_process():
    assert bundle(["approval", "skills", "budget"], {}) == ("approval", "skills")


def test_modules_that_share_an_event_or_are_given_arguments_do_not_share_a_process():
    # skills and steering both handle before_turn: a frame could not say which one it is for.
    assert bundle(["skills", "steering", "prompts"], {}) == ("skills", "prompts")
    assert bundle(["approval", "smoke", "prompts"], {}, alone=("smoke",)) == ("approval", "prompts")


# -- the shared process -------------------------------------------------------------------------


def test_each_module_of_the_shared_process_answers_with_its_own_config(dirs, project):
    (dirs["config"] / "approval.json").write_text('{"mode":"auto"}')
    (dirs["config"] / "system.txt").write_text("Work on {{workspace}} carefully.")
    (dirs["config"] / "prompts.json").write_text('{"system":"system.txt"}')
    skill = project / ".i" / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: greet\ndescription: Say hello.\n---\nSay hello politely.\n")
    worker = WorkerProcess.spawn(GROUP, env=worker_environment(paths_from_env()))
    try:
        context = {"workspace": str(project)}
        decision = worker.call(
            "tool_approval", {"name": "write", "arguments": {}, "external": False, "decision": "ask"}
        )
        prompt = worker.call("system_prompt", {}, context=context)["prompt"]
        loaded = worker.call("tool", {"name": "skill_load", "arguments": {"name": "greet"}}, context=context)
        untouched = worker.call("after_save", {"messages": [], "path": "x"})
        with pytest.raises(Exception, match="unknown tool 'nope'; i-core approval,prompts,skills provides: skill_load"):
            worker.call("tool", {"name": "nope", "arguments": {}})
    finally:
        worker.close()
    assert decision["decision"] == "allow"
    assert prompt == f"Work on {project} carefully."
    assert "Say hello politely." in loaded["output"]
    assert untouched == {"messages": [], "path": "x"}


def test_workers_that_handle_the_same_event_refuse_to_share_a_process():
    first, second = Worker("first", "0"), Worker("second", "0")
    first.hook("before_turn")(lambda data, request: data)
    second.hook("before_turn")(lambda data, request: data)
    with pytest.raises(ValueError, match="'first' and 'second' both handle event 'before_turn'"):
        Together([first, second])


@pytest.mark.parametrize(
    "names, args, message",
    [
        ("approval,prompts", ["--config", "x.json"], "--config applies to one bundled worker, not to approval,prompts"),
        ("approval,steering", [], "bundled worker 'steering' runs alone (it needs --queue)"),
        ("approval,nonsense", [], "unknown bundled worker 'nonsense'"),
    ],
)
def test_a_shared_process_that_cannot_be_served_is_a_usage_error(dirs, names, args, message):
    done = subprocess.run(
        [sys.executable, "-m", "i_core", "--runtime", "worker", names, *args],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert done.returncode == 2 and message in done.stderr


# -- lazy start ---------------------------------------------------------------------------------


def test_a_tool_worker_starts_at_its_first_call_and_only_once(dirs, project, tmp_path, write_manifest):
    hook_argv, hook_marker = _marked(tmp_path, "hook")
    tool_argv, tool_marker = _marked(tmp_path, "tool")
    later_argv, later_marker = _marked(tmp_path, "later")
    parameters = {"type": "object", "properties": {}}
    manifest = write_manifest(
        {
            "tools": [{"name": "mark", "description": "Mark.", "parameters": parameters, "exec": tool_argv}],
            "hooks": [{"events": ["before_turn"], "exec": hook_argv}, {"events": ["compact_plan"], "exec": later_argv}],
        }
    )
    with Runtime(project, manifest_path=manifest) as runtime:
        assert len(runtime.pool.running()) == 1  # the before_turn hook's worker, which the first request needs
        first = runtime.hooks.tool("mark", {})
        second = runtime.hooks.tool("mark", {})
        running = len(runtime.pool.running())
    assert first.output == second.output == "marked"
    assert running == 2
    assert (_starts(hook_marker), _starts(tool_marker), _starts(later_marker)) == (1, 1, 0)


def test_a_worker_that_cannot_be_spawned_is_reported_before_anything_starts(dirs, project, tmp_path, write_manifest):
    hook_argv, hook_marker = _marked(tmp_path, "hook")
    parameters = {"type": "object", "properties": {}}
    missing = str(tmp_path / "not-installed")
    manifest = write_manifest(
        {
            "tools": [{"name": "mark", "description": "Mark.", "parameters": parameters, "exec": [missing]}],
            "hooks": [{"events": ["before_turn"], "exec": hook_argv}],
        }
    )
    with pytest.raises(ConfigError, match=r"tools\[0\]\.exec\[0\] '.*not-installed' is not an executable file"):
        Runtime(project, manifest_path=manifest)
    assert _starts(hook_marker) == 0


# -- tools_list answers are awaited on a helper thread ------------------------------------------

LISTING_WORKER = """
import os, sys, time
from i_protocol import Worker
gate, mode = sys.argv[1], sys.argv[2]
worker = Worker("lister", "0")

@worker.hook("tools_list")
def tools_list(data, request):
    stop = time.monotonic() + 30
    while not os.path.exists(gate) and time.monotonic() < stop:  # answer once the test says so
        time.sleep(0.01)
    if mode == "bad":
        return {"tools": [{"name": "bad name!", "parameters": {"type": "object"}}]}
    tools = [{"name": "listed", "description": "d", "parameters": {"type": "object"}}] if os.path.exists(gate) else []
    return {"tools": tools}

@worker.tool("listed")
def listed(arguments, request):
    return "ok"

sys.exit(worker.main([]))
"""


def _lister(tmp_path: Path, mode: str) -> tuple[Path, Path]:
    script = tmp_path / "lister.py"
    script.write_text(LISTING_WORKER)
    gate = tmp_path / f"gate-{mode}"
    manifest = tmp_path / f"lister-{mode}.json"
    argv = [sys.executable, str(script), str(gate), mode]
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["tools_list"], "exec": argv}]}))
    return gate, manifest


def test_entering_does_not_wait_for_tools_list_and_the_manifest_does(dirs, project, tmp_path):
    """The caller loads the agent while MCP servers are listed; reading the manifest waits for them."""
    gate, manifest = _lister(tmp_path, "good")
    with Runtime(project, manifest_path=manifest, paths=paths_from_env()) as runtime:
        gate.touch()  # had entering waited, the worker would have answered, without the tool, after 30 s
        tool = runtime.manifest.tool("listed")
        assert tool is not None and tool.description == "d"
        assert runtime.hooks.manifest is runtime.manifest  # the hooks route the tool's calls
        assert runtime.hooks.tool("listed", {}).output == "ok"


def test_a_refused_tools_list_answer_is_raised_by_the_manifest_each_time(dirs, project, tmp_path):
    from i_core.errors import HookResultError

    gate, manifest = _lister(tmp_path, "bad")
    gate.touch()
    runtime = Runtime(project, manifest_path=manifest, paths=paths_from_env())
    with pytest.raises(HookResultError, match="the session did not start"), runtime:
        for _ in range(2):
            with pytest.raises(HookResultError, match="bad name!"):
                runtime.ready()
        runtime.ready()
    assert runtime.pool.running() == []


# -- tools_list answers kept between runs ---------------------------------------------------------

KEEPING_WORKER = """
import os, sys
from i_protocol import Worker
from i_protocol.files import file_stamp
source, marker, mode = sys.argv[1], sys.argv[2], sys.argv[3]
with open(marker, "a") as handle:
    handle.write(f"{os.getpid()}\\n")
worker = Worker("keeper", "0")

@worker.hook("tools_list")
def tools_list(data, request):
    stamp = file_stamp(source)  # before reading
    names = open(source).read().split()
    tools = [{"name": name, "description": "kept", "parameters": {"type": "object"}} for name in names]
    depends = [stamp] if mode == "good" else [{"path": "relative/path", "size": 1, "mtime_ns": 1, "ino": 1}]
    return {"tools": tools, "depends_on": depends}

@worker.hook("*")
def other(data, request):
    return data

def _tool(arguments, request):
    return "called"

for name in ("alpha", "beta"):
    worker.tool(name)(_tool)
sys.exit(worker.main([]))
"""


def _keeper(tmp_path: Path, mode: str = "good") -> tuple[Path, Path, Path]:
    script = tmp_path / "keeper.py"
    script.write_text(KEEPING_WORKER)
    source, marker = tmp_path / "names.txt", tmp_path / "keeper.starts"
    source.write_text("alpha\n")
    manifest = tmp_path / "keeper.json"
    argv = [sys.executable, str(script), str(source), str(marker), mode]
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["tools_list"], "exec": argv}]}))
    return manifest, source, marker


def _starts(marker: Path) -> int:
    return len(marker.read_text().split()) if marker.exists() else 0


def _tools(project: Path, manifest: Path) -> list[str]:
    with Runtime(project, manifest_path=manifest, paths=paths_from_env()) as runtime:
        return [tool.name for tool in runtime.manifest.tools]


def test_a_kept_tools_list_answer_starts_no_worker_until_its_files_change(dirs, project, tmp_path):
    manifest, source, marker = _keeper(tmp_path)
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == 1  # asked, and kept
    assert list((dirs["cache"] / "core" / "tools-list").glob("*.json"))
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == 1  # the kept answer, no start
    with Runtime(project, manifest_path=manifest, paths=paths_from_env()) as runtime:
        assert runtime.hooks.tool("alpha", {}).output == "called"  # its worker starts at its first call
    assert _starts(marker) == 2
    source.write_text("alpha beta\n")  # what the answer depends on changed: asked again
    assert _tools(project, manifest) == ["alpha", "beta"] and _starts(marker) == 3
    assert _tools(project, manifest) == ["alpha", "beta"] and _starts(marker) == 3


def test_a_damaged_or_foreign_kept_answer_asks_the_worker_again(dirs, project, tmp_path):
    manifest, _, marker = _keeper(tmp_path)
    _tools(project, manifest)
    (kept,) = (dirs["cache"] / "core" / "tools-list").glob("*.json")
    for damage in (b"{not json", b'{"format": "other"}', orjson.dumps({"format": "i-tools-list/1"})):
        kept.write_bytes(damage)
        before = _starts(marker)
        assert _tools(project, manifest) == ["alpha"] and _starts(marker) == before + 1
    entry = orjson.loads(kept.read_bytes())
    entry["tools"] = [{"name": "read", "description": "shadows a built-in", "parameters": {"type": "object"}}]
    kept.write_bytes(orjson.dumps(entry))  # kept tools that no longer pass the checks
    before = _starts(marker)
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == before + 1


def test_another_workspace_or_program_is_not_given_a_kept_answer(dirs, project, tmp_path):
    manifest, _, marker = _keeper(tmp_path)
    _tools(project, manifest)
    other = tmp_path / "other-project"
    other.mkdir()
    assert _tools(other, manifest) == ["alpha"] and _starts(marker) == 2
    script = tmp_path / "keeper.py"
    script.write_text(script.read_text() + "\n# upgraded\n")  # a program file of its argv changed
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == 3


def test_a_malformed_depends_on_is_refused_naming_it(dirs, project, tmp_path):
    from i_core.errors import HookResultError

    manifest, _, _ = _keeper(tmp_path, mode="bad")
    with pytest.raises(HookResultError) as caught:
        _tools(project, manifest)
    assert "returned depends_on[0] that is not a file stamp" in str(caught.value)
    assert "the session did not start" in str(caught.value)
    assert not (dirs["cache"] / "core" / "tools-list").exists()


def test_a_workspace_with_an_undecodable_name_keeps_its_answer_too(dirs, tmp_path):
    import os

    project = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9"))  # a Latin-1 folder name: 'caf\udce9'
    project.mkdir()
    manifest, _, marker = _keeper(tmp_path)
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == 1
    assert _tools(project, manifest) == ["alpha"] and _starts(marker) == 1  # kept, and found again
