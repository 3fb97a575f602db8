"""Undo of a turn with the real checkpoint worker: files back exactly, the conversation cut before the
turn, a file changed since kept, the dry run's list, the bound said before a command runs, a
replacement bound through bindings.json."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import orjson

from i_protocol.jsonsafe import loads_safe
from i_scripted import ScriptedModel

SHELL = (
    "echo made > created.txt && mv old.txt renamed.txt && rm gone.txt && chmod 700 tool.sh"
    " && ln -s README.md link && mkdir -p build && echo obj > build/out.o"
)


def _tree(folder: Path) -> dict[str, tuple[str, Any, int]]:
    found: dict[str, tuple[str, Any, int]] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in (".git", ".i")]
        for name in [*dirnames, *filenames]:
            path = Path(dirpath) / name
            info = path.lstat()
            rel = path.relative_to(folder).as_posix()
            if stat.S_ISLNK(info.st_mode):
                found[rel] = ("link", os.readlink(path), 0)
            elif stat.S_ISDIR(info.st_mode):
                found[rel] = ("dir", None, stat.S_IMODE(info.st_mode))
            else:
                found[rel] = ("file", path.read_bytes(), stat.S_IMODE(info.st_mode))
    return found


def _git_project(project: Path) -> Path:
    (project / ".git").mkdir()
    (project / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (project / ".gitignore").write_text("build/\n")
    for name in ("a.py", "b.py", "c.py", "old.txt", "gone.txt"):
        (project / name).write_text(f"# {name}\n")
    (project / "tool.sh").write_text("#!/bin/sh\n")
    os.chmod(project / "tool.sh", 0o644)
    return project


def _turn_steps() -> list[dict[str, Any]]:
    edits = [
        {"name": "write", "arguments": {"path": "a.py", "content": "A = 1\n"}},
        {"name": "edit", "arguments": {"path": "b.py", "old_string": "# b.py", "new_string": "B = 2"}},
        {"name": "write", "arguments": {"path": "pkg/c2.py", "content": "C = 3\n"}},
    ]
    return [
        {"tool_calls": edits},
        {"tool_calls": [{"name": "shell", "arguments": {"command": SHELL}}]},
        {"text": "done"},
    ]


def _session(project: Path, name: str = "u") -> dict[str, Any]:
    doc: dict[str, Any] = loads_safe((project / ".i" / "sessions" / f"{name}.json").read_bytes())
    return doc


def test_a_turn_of_edits_and_a_shell_command_is_undone_exactly(i, write_config, plugins, project, dirs):
    plugins("checkpoint")
    _git_project(project)
    with ScriptedModel([{"text": "hello"}, *_turn_steps()]) as model:
        write_config(model.base_url)
        first = i("-C", str(project), "--session-name", "u", "--yolo", "say hello")
        assert first.returncode == 0, first.stderr
        before = _tree(project)
        second = i("-C", str(project), "--session-name", "u", "--yolo", "change things")
        assert second.returncode == 0, second.stderr
    assert _tree(project) != before
    assert (project / "renamed.txt").exists() and not (project / "gone.txt").exists()
    messages = len(_session(project)["messages"])
    preview = i("--runtime", "undo", "-C", str(project), "--session", "u", "--dry-run")
    assert preview.returncode == 0, preview.stderr
    for path in ("a.py", "b.py", "pkg/c2.py", "created.txt", "renamed.txt", "gone.txt", "tool.sh", "link"):
        assert f" {path}: " in preview.stdout, (path, preview.stdout)
    assert "not undoable" in preview.stdout and "git push" in preview.stdout
    assert len(_session(project)["messages"]) == messages  # a dry run changes nothing
    done = i("--runtime", "undo", "-C", str(project), "--session", "u", "--yes")
    assert done.returncode == 0, done.stderr
    assert _tree(project) == before  # bytes, modes, links, folders
    kept = _session(project)["messages"]
    assert [m["role"] for m in kept] == ["system", "user", "assistant"] and kept[1]["content"] == "say hello"
    again = i("--runtime", "undo", "-C", str(project), "--session", "u", "--turn", "2", "--yes")
    assert again.returncode == 3 and "undone already" in again.stderr


def test_a_file_the_user_changed_afterwards_is_not_clobbered(i, write_config, plugins, project, dirs):
    plugins("checkpoint")
    _git_project(project)
    with ScriptedModel(_turn_steps()) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "u", "--yolo", "change things").returncode == 0
    (project / "a.py").write_text("the user's own\n")
    preview = i("--runtime", "undo", "-C", str(project), "--session", "u", "--dry-run")
    assert "KEEP     a.py" in preview.stdout and "changed since the turn" in preview.stdout
    assert "restore  b.py" in preview.stdout
    done = i("--runtime", "undo", "-C", str(project), "--session", "u", "--yes")
    assert done.returncode == 0, done.stderr
    assert (project / "a.py").read_text() == "the user's own\n"
    assert (project / "b.py").read_text() == "# b.py\n" and (project / "old.txt").exists()


def test_a_turn_over_the_bound_is_marked_not_undoable_before_it_runs(i, write_config, plugins, project, dirs):
    plugins("checkpoint")
    _git_project(project)
    (dirs["config"] / "checkpoint.json").write_text('{"max_files": 5}')
    steps = [{"tool_calls": [{"name": "shell", "arguments": {"command": "rm c.py"}}]}, {"text": "ok"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        run = i("-C", str(project), "--session-name", "u", "--yolo", "remove c")
        assert run.returncode == 0, run.stderr
    notice = run.stderr.index("more than 5 files")
    assert "not undoable" in run.stderr[: notice + 100]
    assert notice < run.stderr.index("running shell") if "running shell" in run.stderr else True
    preview = i("--runtime", "undo", "-C", str(project), "--session", "u", "--dry-run")
    assert "no file to restore" in preview.stdout and "max_files" in preview.stdout


def test_outside_a_git_work_tree_the_shell_is_said_not_undoable_and_write_still_is(
    i, write_config, plugins, project, dirs
):
    plugins("checkpoint")
    steps = [
        {"tool_calls": [{"name": "write", "arguments": {"path": "n.txt", "content": "n"}}]},
        {"tool_calls": [{"name": "shell", "arguments": {"command": "echo x > m.txt"}}]},
        {"text": "ok"},
    ]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        run = i("-C", str(project), "--session-name", "u", "--yolo", "two files")
        assert run.returncode == 0, run.stderr
    assert "not in a git work tree" in run.stderr
    done = i("--runtime", "undo", "-C", str(project), "--session", "u", "--yes")
    assert done.returncode == 0, done.stderr
    assert not (project / "n.txt").exists() and (project / "m.txt").exists()
    assert "not in a git work tree" in done.stdout


def test_without_the_module_undo_is_an_error_naming_it(i, write_config, plugins, project, dirs):
    plugins("standard")
    with ScriptedModel([{"text": "hi"}]) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "u", "hello").returncode == 0
    done = i("--runtime", "undo", "-C", str(project), "--session", "u", "--yes")
    assert done.returncode == 3 and "checkpoint module" in done.stderr
    assert len(_session(project)["messages"]) == 3  # the conversation is never rolled back alone


def test_a_replacement_bound_through_bindings_json_is_used(i, write_config, plugins, project, dirs, tmp_path):
    plugins("checkpoint")
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "my-checkpointer"
    real = Path(sys.executable).parent / "i-checkpoint"
    wrapper.write_text(f'#!/bin/sh\necho started >> {log}\nexec {real} "$@"\n')
    os.chmod(wrapper, 0o755)
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"checkpoint": {"exec": [str(wrapper)]}}))
    steps = [{"tool_calls": [{"name": "write", "arguments": {"path": "n.txt", "content": "n"}}]}, {"text": "ok"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        assert i("-C", str(project), "--session-name", "u", "--yolo", "one file").returncode == 0
    done = i("--runtime", "undo", "-C", str(project), "--session", "u", "--yes")
    assert done.returncode == 0, done.stderr
    assert not (project / "n.txt").exists()
    assert log.read_text().count("started") == 2  # the session's run and the undo's


def test_the_check_command_covers_the_checkpoint_contract(i):
    run = i("--runtime", "check", "checkpoint")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "undo: round trip" in run.stdout and "hello: turn_context and undo" in run.stdout


def test_undo_in_the_console_on_a_pseudo_terminal(write_config, plugins, project, dirs, env):
    import pty
    import select
    import time

    from i_protocol.testing import scaled

    plugins("checkpoint")
    _git_project(project)
    steps = [{"tool_calls": [{"name": "write", "arguments": {"path": "a.py", "content": "changed\n"}}]}, {"text": "ok"}]
    with ScriptedModel(steps) as model:
        write_config(model.base_url)
        argv = [
            str(Path(sys.executable).parent / "i"),
            "-C",
            str(project),
            "--yolo",
            "--no-logo",
            "--session-name",
            "u",
        ]
        pid, fd = pty.fork()
        if pid == 0:  # the child: the real console on the pseudo-terminal
            os.execve(argv[0], argv, env)
        seen = b""

        def until(text: bytes, seconds: float = 30) -> None:
            nonlocal seen
            end = time.monotonic() + scaled(seconds)
            while text not in seen and time.monotonic() < end:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if ready:
                    try:
                        seen += os.read(fd, 65536)
                    except OSError:
                        return
            assert text in seen, seen.decode(errors="replace")[-2000:]

        try:
            until(b"> ")
            os.write(fd, b"change a\r")
            until(b"compactions")
            assert (project / "a.py").read_text() == "changed\n"
            os.write(fd, b"/undo\r")
            until(b"[y/N]: ")
            assert b"restore  a.py" in seen and (project / "a.py").read_text() == "changed\n"
            os.write(fd, b"y\r")
            until(b"returned to before turn 1")
            assert (project / "a.py").read_text() == "# a.py\n"
            os.write(fd, b"/exit\r")
            until(b"session:")
        finally:
            os.close(fd)
            os.waitpid(pid, 0)
    assert [m["role"] for m in _session(project)["messages"]] == ["system"]
