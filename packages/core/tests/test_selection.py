from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import orjson
import pytest

from i_core.errors import ConfigError
from i_core.initialise import initialise
from i_core.modules import MODULES, PROFILES
from i_core.plugins import load_bindings, load_plugins
from i_core.selection import generate_manifest, load_active_manifest


def make_exe(path: Path) -> Path:
    path.write_text("#!/bin/sh\nexit 0\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake_workers(tmp_path, monkeypatch):
    """Console scripts of every external worker on PATH (not next to the interpreter)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for spec in MODULES.values():
        if spec.script:
            make_exe(bin_dir / spec.script)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    # An interpreter folder with no worker scripts, so PATH is what finds them.
    (tmp_path / "venv" / "bin").mkdir(parents=True)
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    return bin_dir


def test_script_next_to_the_interpreter_wins_over_path(dirs, fake_workers, tmp_path):
    beside = make_exe(tmp_path / "venv" / "bin" / "i-budget")
    manifest = generate_manifest("budget", dirs["config"])
    assert manifest["hooks"][0]["exec"] == [str(beside)]


def write(path: Path, value) -> Path:
    path.write_bytes(orjson.dumps(value))
    return path


def test_every_profile_selects_known_modules():
    for profile, modules in PROFILES.items():
        assert all(name in MODULES for name in modules), profile
    assert PROFILES["standard"] == tuple(m for m in PROFILES["full"] if m not in ("responses", "checkpoint"))
    assert PROFILES["compact"] == ("budget", "compact")
    assert PROFILES["search"] == ()


def test_generated_manifest_uses_absolute_paths_and_module_schemas(dirs, fake_workers):
    manifest = generate_manifest("compact", dirs["config"])
    assert [h["module"] for h in manifest["hooks"]] == ["budget", "compact"]
    assert manifest["hooks"][1]["events"] == ["compact_plan", "before_compact", "after_compact", "after_compact_commit"]
    assert manifest["hooks"][0]["exec"] == [str(fake_workers / "i-budget")]
    assert manifest["hooks"][0]["cwd"] == str(dirs["config"])
    web = generate_manifest("web", dirs["config"])
    assert [t["name"] for t in web["tools"]] == ["web_fetch", "web_search"]
    assert all(t["exec"] == [str(fake_workers / "i-web")] for t in web["tools"])


def test_bundled_modules_run_as_i_runtime_worker(dirs):
    manifest = generate_manifest("approval", dirs["config"])
    assert manifest["hooks"][0]["exec"] == [sys.executable, "-m", "i_core", "--runtime", "worker", "approval"]
    assert manifest["hooks"][0]["cwd"] == str(dirs["config"])


def test_missing_worker_names_the_package_and_how_to_disable(dirs, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "venv" / "bin" / "python"))
    with pytest.raises(ConfigError) as info:
        generate_manifest("web", dirs["config"])
    message = str(info.value)
    assert "pipx install i-worker-web" in message and '"disabled": ["web"]' in message


def test_binding_replaces_every_entry_of_a_module_and_keeps_schemas(dirs, fake_workers, tmp_path):
    mine = make_exe(tmp_path / "my-web")
    write(dirs["config"] / "bindings.json", {"web": {"exec": [str(mine), "--opt"], "cwd": str(tmp_path)}})
    manifest = generate_manifest("web", dirs["config"])
    assert [t["exec"] for t in manifest["tools"]] == [[str(mine), "--opt"]] * 2
    assert [t["cwd"] for t in manifest["tools"]] == [str(tmp_path)] * 2
    assert manifest["tools"][0]["parameters"] == MODULES["web"].tools[0]["parameters"]


@pytest.mark.parametrize(
    "bindings, message",
    [
        ({"compat": {"exec": ["/bin/true"]}}, "module 'compat' is unknown; known modules: approval, budget, cache"),
        ({"compact": {"exec": "/bin/true --x"}}, "exec must be an argv array, not a shell string"),
        ({"compact": {"exec": ["relative/worker"]}}, "exec[0] must be an absolute path"),
        ({"compact": {"exec": ["/definitely/missing/worker"]}}, "is not an executable file"),
        ({"compact": {"exec": ["/bin/true"], "cwd": "rel"}}, "cwd must be an absolute path"),
        ({"compact": {"exec": ["/bin/true"], "cwd": "/definitely/missing"}}, "does not exist"),
        ({"compact": {"exec": ["/bin/true"], "env": {}}}, "compact: unknown field(s) env; known fields: exec, cwd"),
        ({"compact": ["/bin/true"]}, "binding must be an object"),
    ],
)
def test_invalid_bindings_are_errors_never_a_fallback(dirs, fake_workers, bindings, message):
    write(dirs["config"] / "bindings.json", bindings)
    with pytest.raises(ConfigError) as info:
        generate_manifest("compact", dirs["config"])
    assert message in str(info.value)


@pytest.mark.parametrize(
    "plugins, message",
    [
        ({"profile": "everything"}, "unknown profile 'everything'"),
        ({"disabled": ["webb"]}, "disabled module 'webb' is unknown"),
        ({"disabled": "web"}, "disabled must be an array"),
        ({"profiles": "standard"}, "unknown field(s) profiles; known fields: profile, disabled"),
    ],
)
def test_invalid_plugins_json(dirs, plugins, message):
    write(dirs["config"] / "plugins.json", plugins)
    with pytest.raises(ConfigError) as info:
        load_plugins(dirs["config"])
    assert message in str(info.value)


def test_builtin_configured_resolves_at_every_start(dirs, fake_workers, tmp_path):
    initialise(dirs["config"])
    write(dirs["config"] / "plugins.json", {"profile": "compact", "disabled": []})
    first = load_active_manifest(dirs["config"])
    assert [h.module for h in first.hooks] == ["budget", "compact"]
    # Change the selection and a binding: the next start sees both, nothing was saved in between.
    write(dirs["config"] / "plugins.json", {"profile": "compact", "disabled": ["compact"]})
    mine = make_exe(tmp_path / "my-budget")
    write(dirs["config"] / "bindings.json", {"budget": {"exec": [str(mine)]}})
    second = load_active_manifest(dirs["config"])
    assert [h.module for h in second.hooks] == ["budget"]
    assert second.hooks[0].exec.argv == (str(mine),)
    assert orjson.loads((dirs["config"] / "builtin.json").read_bytes()) == {
        "builtin_profile": "configured",
        "tools": [],
    }


def test_hand_written_manifest_is_authoritative_and_untouched(dirs, tmp_path):
    path = write(tmp_path / "desktop.json", {"hooks": [{"events": ["finish"], "exec": [sys.executable, "x.py"]}]})
    before = path.read_bytes(), path.stat().st_mtime_ns
    manifest = load_active_manifest(dirs["config"], path)
    assert manifest.hooks[0].exec.argv == (sys.executable, "x.py")
    assert (path.read_bytes(), path.stat().st_mtime_ns) == before


def test_no_builtin_json_means_builtin_tools_only(dirs):
    manifest = load_active_manifest(dirs["config"])
    assert manifest.tools == () and manifest.hooks == ()


def test_init_never_overwrites(dirs):
    (dirs["config"] / "plugins.json").write_text('{"profile":"web"}')
    results = dict(initialise(dirs["config"]))
    assert results[dirs["config"] / "plugins.json"] is False
    assert results[dirs["config"] / "config.json"] is True
    assert (dirs["config"] / "plugins.json").read_text() == '{"profile":"web"}'
    assert not any(p.name.endswith(".tmp") for p in dirs["config"].iterdir())
    assert all(created is False for created in dict(initialise(dirs["config"])).values())


def test_the_responses_module_is_bundled(dirs):
    manifest = generate_manifest("responses", dirs["config"])
    (hook,) = manifest["hooks"]
    assert hook["module"] == "responses" and hook["events"] == ["before_request", "after_response"]
    assert hook["exec"][-2:] == ["worker", "responses"]


def test_load_bindings_absent_is_empty(dirs):
    assert load_bindings(dirs["config"]) == {}


def test_profiles_select_mcp_only_when_mcp_json_names_servers_to_run(dirs, fake_workers):
    def modules(profile: str, disabled: tuple[str, ...] = ()) -> list[str]:
        manifest = generate_manifest(profile, dirs["config"], disabled=["responses", *disabled])
        return [hook["module"] for hook in manifest["hooks"]]

    assert "mcp" not in modules("standard") and "mcp" not in modules("full") and modules("mcp") == []
    write(dirs["config"] / "mcp.json", {"mcpServers": {}})
    assert "mcp" in modules("standard") and "mcp" in modules("full") and modules("mcp") == ["mcp"]
    assert "mcp" not in modules("standard", ("mcp",))
    (mcp,) = generate_manifest("mcp", dirs["config"])["hooks"]
    assert mcp["events"] == ["tools_list"] and mcp["exec"] == [str(fake_workers / "i-mcp")]
