"""Recording turns and undoing them, through the real worker process and real files."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from checkpoint_harness import SESSION, Env, tree

from i_protocol import ErrorFrame
from i_protocol.host import WorkerProcess


def _project(env: Env) -> Path:
    p = env.project
    (p / "src").mkdir()
    (p / "src" / "a.py").write_bytes(b"print('a')\n")
    (p / "b.txt").write_bytes(b"bee\n")
    (p / "run.sh").write_bytes(b"#!/bin/sh\necho hi\n")
    os.chmod(p / "run.sh", 0o755)
    (p / "build").mkdir()
    (p / "build" / "out.o").write_bytes(b"\x00\x01ignored")
    os.symlink("src/a.py", p / "link")
    return p


def test_hello_declares_turn_context_and_undo(worker: WorkerProcess) -> None:
    answer = worker.call("hello", {"package": "i-core", "version": "0", "protocol": "1", "extensions": []})
    assert answer["package"] == "i-worker-checkpoint"
    assert set(answer["extensions"]) == {"config_kind", "turn_context", "undo"}


def test_a_turn_of_writes_and_a_shell_command_is_undone_exactly(env: Env, worker: WorkerProcess) -> None:
    p = _project(env)
    original = tree(p)
    env.tool(worker, 1, "write", {"path": "src/a.py", "content": "x"}, lambda: (p / "src/a.py").write_text("x"))
    env.tool(worker, 1, "edit", {"path": "b.txt"}, lambda: (p / "b.txt").write_text("B"))
    env.tool(
        worker, 1, "write", {"path": "new/c.txt"}, lambda: ((p / "new").mkdir(), (p / "new/c.txt").write_text("c"))
    )

    def shell() -> None:
        (p / "created.txt").write_bytes(b"made")
        os.rename(p / "run.sh", p / "run2.sh")
        os.remove(p / "build" / "out.o")
        os.chmod(p / "b.txt", 0o600)
        os.remove(p / "link")
        os.symlink("b.txt", p / "link")
        shutil.rmtree(p / "src")

    assert env.tool(worker, 1, "shell", {"command": "stuff"}, shell) is None
    assert tree(p) != original
    plan = env.undo(worker, 1, dry_run=True)
    assert plan["turns"] == [1] and plan["applied"] is False
    assert {f["status"] for f in plan["files"]} == {"restore"}
    assert "created.txt" in {f["path"] for f in plan["files"]}
    assert any("git push" in note for note in plan["not_undoable"])
    assert tree(p) != original  # a dry run changes nothing
    done = env.undo(worker, 1, dry_run=False)
    assert done["applied"] is True and {f["status"] for f in done["files"]} == {"restored"}
    assert tree(p) == original


def test_a_file_changed_since_is_not_clobbered(env: Env, worker: WorkerProcess) -> None:
    p = _project(env)
    env.tool(worker, 1, "write", {"path": "b.txt"}, lambda: (p / "b.txt").write_text("agent"))
    env.tool(worker, 1, "write", {"path": "src/a.py"}, lambda: (p / "src/a.py").write_text("agent"))
    (p / "b.txt").write_text("the user's own")
    plan = env.undo(worker, 1, dry_run=True)
    status = {f["path"]: f["status"] for f in plan["files"]}
    assert status == {"b.txt": "conflict", "src/a.py": "restore"}
    env.undo(worker, 1, dry_run=False)
    assert (p / "b.txt").read_text() == "the user's own"
    assert (p / "src/a.py").read_bytes() == b"print('a')\n"


def test_undo_of_an_earlier_turn_takes_back_the_later_ones_and_an_undo_is_not_undone(
    env: Env, worker: WorkerProcess
) -> None:
    p = _project(env)
    env.tool(worker, 1, "write", {"path": "b.txt"}, lambda: (p / "b.txt").write_text("one"))
    env.tool(worker, 2, "write", {"path": "b.txt"}, lambda: (p / "b.txt").write_text("two"))
    env.tool(worker, 2, "write", {"path": "d.txt"}, lambda: (p / "d.txt").write_text("dee"))
    done = env.undo(worker, 1, dry_run=False)
    assert done["turns"] == [1, 2]
    assert (p / "b.txt").read_text() == "bee\n" and not (p / "d.txt").exists()
    with pytest.raises(ErrorFrame, match="undone already"):
        env.undo(worker, 2, dry_run=True)


def test_shell_outside_a_git_work_tree_is_said_not_undoable_before_it_runs(tmp_path: Path) -> None:
    env = Env(tmp_path, git=False)
    worker = env.spawn()
    try:
        notice = env.tool(worker, 1, "shell", {"command": "rm x"}, lambda: None)
        assert notice is not None and "not in a git work tree" in notice
        plan = env.undo(worker, 1, dry_run=True)
        assert any("not in a git work tree" in note for note in plan["not_undoable"])
    finally:
        worker.close()


def test_a_tree_over_the_bound_is_said_not_undoable_before_the_command_runs(env: Env, worker: WorkerProcess) -> None:
    p = _project(env)
    env.write_config({"max_files": 3})
    notice = env.tool(worker, 1, "shell", {"command": "x"}, lambda: (p / "made.txt").write_text("x"))
    assert notice is not None and "more than 3 files" in notice
    plan = env.undo(worker, 1, dry_run=True)
    assert plan["files"] == [] and any("max_files" in note for note in plan["not_undoable"])
    assert p.exists()


def test_a_snapshot_out_of_time_is_said_before_the_command_and_the_next_goes_on(
    env: Env, worker: WorkerProcess
) -> None:
    p = _project(env)
    env.write_config({"max_seconds": 0})
    notice = env.tool(worker, 1, "shell", {"command": "x"}, lambda: None)
    assert notice is not None and "took over 0 s" in notice
    env.write_config({})
    assert env.tool(worker, 2, "shell", {"command": "y"}, lambda: (p / "b.txt").write_text("changed")) is None
    env.undo(worker, 2, dry_run=False)
    assert (p / "b.txt").read_bytes() == b"bee\n"


def test_bad_settings_are_one_clear_error(env: Env, worker: WorkerProcess) -> None:
    env.write_config({"max_files": "many"})
    with pytest.raises(ErrorFrame, match="max_files"):
        env.tool(worker, 1, "shell", {"command": "x"}, lambda: None)


def test_a_write_outside_the_workspace_is_said_not_undoable(env: Env, worker: WorkerProcess) -> None:
    notice = env.tool(worker, 1, "write", {"path": str(env.root / "elsewhere.txt")}, lambda: None)
    assert notice is not None and "outside the workspace" in notice


def test_the_store_is_private_and_outside_the_project(env: Env, worker: WorkerProcess) -> None:
    p = _project(env)
    env.tool(worker, 1, "write", {"path": "b.txt"}, lambda: (p / "b.txt").write_text("x"))
    assert env.store.is_dir() and (env.store.stat().st_mode & 0o077) == 0
    objects = [f for f in (env.store / "objects").rglob("*") if f.is_file()]
    assert objects and all((f.stat().st_mode & 0o077) == 0 for f in objects)
    assert not any(".i" in part for part in env.store.parts[: len(p.parts)])
    assert sorted(os.listdir(p / ".git")) == []  # the repository is never touched


def test_bad_undo_data_is_one_clear_error(env: Env, worker: WorkerProcess) -> None:
    with pytest.raises(ErrorFrame, match=r"data\.turn must be a positive integer"):
        env.call(worker, "undo", {"session": SESSION, "turn": 0, "dry_run": True})
    with pytest.raises(ErrorFrame, match=r"data\.session"):
        env.spawn().call("undo", {"session": "../x", "turn": 1}, context=env.context())


def test_without_turn_context_nothing_is_recorded(env: Env, worker: WorkerProcess) -> None:
    data = {"name": "write", "arguments": '{"path":"b.txt"}', "id": "c1"}
    assert env.call(worker, "before_tool", data) == data
    assert not env.store.exists()
