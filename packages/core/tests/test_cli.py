from __future__ import annotations

import socket
import subprocess
import sys
import uuid

import orjson

from i_core.__about__ import __version__
from i_protocol import PROTOCOL_VERSION
from i_protocol.testing import scaled


def test_version(run_i):
    result = run_i("--version")
    assert result.returncode == 0
    # The first line is what cores parse (version_line.parse_version_line); the builds follow (test_preflight).
    assert result.stdout.decode().splitlines()[0] == f"i-core {__version__} (i-protocol {PROTOCOL_VERSION})"


def test_init_creates_four_files_and_never_overwrites(run_i, dirs):
    # A port nothing listens on: init asks the server for its context size (see test_initialise.py).
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        nothing = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    first = run_i("--runtime", "init", "--base-url", nothing)
    assert first.returncode == 0
    assert sorted(p.name for p in dirs["config"].iterdir()) == [
        "bindings.json",
        "builtin.json",
        "config.json",
        "plugins.json",
    ]
    (dirs["config"] / "config.json").write_text('{"model":"mine"}')
    second = run_i("--runtime", "init")
    assert second.returncode == 0 and second.stdout.decode().count("kept") == 4
    assert (dirs["config"] / "config.json").read_text() == '{"model":"mine"}'


def test_manifest_command_prints_absolute_paths(run_i, dirs):
    result = run_i("--runtime", "manifest", "approval")
    assert result.returncode == 0, result.stderr
    manifest = orjson.loads(result.stdout)
    assert manifest["hooks"][0]["exec"][0] == sys.executable
    assert manifest["hooks"][0]["module"] == "approval"


def test_manifest_command_errors_are_one_clear_line(run_i, dirs, tmp_path):
    (dirs["config"] / "bindings.json").write_text('{"compat":{"exec":["/bin/true"]}}')
    result = run_i("--runtime", "manifest", "approval")
    assert result.returncode == 3
    assert result.stderr.decode().startswith("i: ")
    assert "module 'compat' is unknown" in result.stderr.decode()
    assert b"Traceback" not in result.stderr
    bad_profile = run_i("--runtime", "manifest", "everything")
    assert bad_profile.returncode == 2 and b"invalid choice" in bad_profile.stderr


def test_paths_prints_directories_and_workspace_id(run_i, dirs, project):
    result = run_i("--runtime", "paths", "-C", str(project))
    assert result.returncode == 0, result.stderr
    info = orjson.loads(result.stdout)
    assert info["data_dir"] == str(dirs["data"]) and info["workspace"] == str(project.resolve())
    assert str(uuid.UUID(info["workspace_id"])) == info["workspace_id"]
    assert info["state_dir"] == str(dirs["data"] / "workspaces" / info["workspace_id"])
    again = orjson.loads(run_i("--runtime", "paths", "-C", str(project)).stdout)
    assert again["workspace_id"] == info["workspace_id"]


def test_paths_of_a_missing_project_is_a_clear_error(run_i, dirs, tmp_path):
    result = run_i("--runtime", "paths", "-C", str(tmp_path / "absent"))
    assert result.returncode == 3 and b"cannot be resolved" in result.stderr


def test_two_core_processes_racing_get_the_same_workspace_id(dirs, project):
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "i_core", "--runtime", "paths", "-C", str(project)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(6)
    ]
    ids = {orjson.loads(p.communicate(timeout=scaled(60))[0])["workspace_id"] for p in procs}
    assert len(ids) == 1
    registry = orjson.loads((dirs["data"] / "workspaces.json").read_bytes())
    assert len(registry["workspaces"]) == 1


def test_relative_directory_variable_is_a_config_error(run_i, project):
    result = run_i("--runtime", "paths", "-C", str(project), env_extra={"I_DATA_DIR": "relative"})
    assert result.returncode == 3 and b"I_DATA_DIR must be an absolute path" in result.stderr


def test_hook_command_runs_the_chain(run_i, dirs, project, chain_exec, write_manifest):
    manifest = write_manifest(
        {
            "hooks": [
                {"events": ["before_turn"], "exec": chain_exec("a")},
                {"events": ["before_turn"], "exec": chain_exec("b")},
            ]
        }
    )
    result = run_i(
        "--runtime", "hook", "before_turn", "-C", str(project), "--manifest", str(manifest), input=b'{"x":1}'
    )
    assert result.returncode == 0, result.stderr
    data = orjson.loads(result.stdout)
    assert data["trail"] == ["a", "b"] and data["x"] == 1


def test_hook_command_reports_worker_failure(run_i, dirs, project, faulty_exec, write_manifest):
    manifest = write_manifest({"hooks": [{"events": ["before_turn"], "exec": faulty_exec("list_data")}]})
    result = run_i("--runtime", "hook", "before_turn", "-C", str(project), "--manifest", str(manifest), input=b"{}")
    assert result.returncode == 6
    assert b"failed on 'before_turn'" in result.stderr and b"expected an object" in result.stderr
