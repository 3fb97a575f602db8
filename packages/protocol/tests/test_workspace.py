from __future__ import annotations

import os
import subprocess
import sys
import uuid

import orjson
import pytest

from i_protocol import WorkspaceError
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled
from i_protocol.workspace import (
    MAX_ENTRIES,
    MAX_REGISTRY_BYTES,
    workspace_digest,
    workspace_id_for,
    workspace_state_dir,
)


def test_same_workspace_same_id_and_no_rewrite(tmp_path):
    project, data = tmp_path / "project", tmp_path / "data"
    project.mkdir()
    first = workspace_id_for(project, data)
    assert str(uuid.UUID(first)) == first
    registry = data / "workspaces.json"
    before = registry.stat().st_mtime_ns, registry.read_bytes()
    # Via a symlink and a trailing "/.": the canonical path is the same, so is the id.
    link = tmp_path / "link"
    link.symlink_to(project)
    assert workspace_id_for(f"{link}/.", data) == first
    assert (registry.stat().st_mtime_ns, registry.read_bytes()) == before


def test_different_workspaces_get_different_ids(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir(), b.mkdir()
    assert workspace_id_for(a, tmp_path / "d") != workspace_id_for(b, tmp_path / "d")


def test_missing_workspace_is_an_error(tmp_path):
    with pytest.raises(WorkspaceError, match="cannot be resolved"):
        workspace_id_for(tmp_path / "absent", tmp_path / "d")


def test_corrupt_registry_is_reported_not_reset(tmp_path):
    (tmp_path / "d").mkdir()
    registry = tmp_path / "d" / "workspaces.json"
    registry.write_bytes(b'{"workspaces": {trunc')
    with pytest.raises(WorkspaceError, match="not valid JSON"):
        workspace_id_for(tmp_path, tmp_path / "d")
    assert registry.read_bytes() == b'{"workspaces": {trunc'


def test_registry_over_2mb_is_refused(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "workspaces.json").write_bytes(b" " * (MAX_REGISTRY_BYTES + 1))
    with pytest.raises(WorkspaceError, match="larger than"):
        workspace_id_for(tmp_path, tmp_path / "d")


def test_registry_is_bounded_to_10000_entries(tmp_path):
    (tmp_path / "d").mkdir()
    entries = {f"{i:064x}": {"id": str(uuid.UUID(int=i + 1)), "path": f"/p{i}"} for i in range(MAX_ENTRIES)}
    (tmp_path / "d" / "workspaces.json").write_bytes(orjson.dumps({"version": 1, "workspaces": entries}))
    with pytest.raises(WorkspaceError, match="10000 entries"):
        workspace_id_for(tmp_path, tmp_path / "d")


def test_racing_processes_agree_on_one_id(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    code = "import sys; from i_protocol.workspace import workspace_id_for; print(workspace_id_for(sys.argv[1], sys.argv[2]))"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(project), str(tmp_path / "data")], stdout=subprocess.PIPE, text=True
        )
        for _ in range(12)
    ]
    ids = [p.communicate(timeout=scaled(60))[0].strip() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert len(set(ids)) == 1
    registry = orjson.loads((tmp_path / "data" / "workspaces.json").read_bytes())
    assert list(registry["workspaces"]) == [workspace_digest(os.path.realpath(project))]


def test_state_dir_is_under_data_workspaces(tmp_path):
    wid = str(uuid.uuid4())
    assert workspace_state_dir(wid, tmp_path) == tmp_path / "workspaces" / wid


def test_worker_uses_explicit_workspace_id_or_the_registry(fixture_argv, worker_env, dirs, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    explicit = str(uuid.uuid4())
    worker = WorkerProcess.spawn(fixture_argv(), env=worker_env)
    try:
        by_registry = worker.call("context", {}, context={"workspace": str(project)})
        assert by_registry["workspace_id"] == workspace_id_for(project, dirs["data_dir"])
        by_id = worker.call("context", {}, context={"workspace": str(project), "workspace_id": explicit.upper()})
        assert by_id["workspace_id"] == explicit
    finally:
        worker.close()
