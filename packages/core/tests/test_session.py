from __future__ import annotations

import os
import pty
import select
import sys
import time

import orjson
import pytest

from i_core.errors import SessionError
from i_core.session import dumps_safe, open_session, session_path_for_name
from i_protocol.jsonsafe import loads_safe
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

WID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


def test_lone_surrogates_survive_a_save_and_a_backup_losslessly(tmp_path):
    session = open_session(tmp_path / "s.json", "/w", WID)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "bad byte \udcff here"}]
    session.write(messages)
    backup = session.write_backup("precompact", messages)
    session.close()
    for path in (tmp_path / "s.json", backup):
        raw = path.read_bytes()
        raw.decode("utf-8")  # the file itself is valid UTF-8
        assert loads_safe(raw)["messages"][1]["content"] == "bad byte \udcff here"
    reopened = open_session(tmp_path / "s.json", "/w", WID)
    assert reopened.messages == messages
    reopened.close()


def test_dumps_safe_uses_orjson_when_it_can():
    assert dumps_safe({"a": "é"}) == orjson.dumps({"a": "é"})


def test_a_second_writer_is_refused(tmp_path):
    first = open_session(tmp_path / "s.json", "/w", WID)
    with pytest.raises(SessionError, match="in use by another i process"):
        open_session(tmp_path / "s.json", "/w", WID)
    first.close()
    open_session(tmp_path / "s.json", "/w", WID).close()


@pytest.mark.parametrize("name", ["", "../x", "a/b", ".hidden", "x" * 65, "s.json"])
def test_invalid_session_names(name):
    with pytest.raises(SessionError, match="session name"):
        session_path_for_name("/w", name)


def test_not_a_session_file(tmp_path):
    (tmp_path / "s.json").write_text('{"hello": 1}')
    with pytest.raises(SessionError, match="not an i session file"):
        open_session(tmp_path / "s.json", "/w", WID)


def test_console_on_a_tty(dirs, project, tmp_path):
    """`i` with a terminal is a line console: a prompt, an answer, /exit."""
    with ScriptedModel([{"text": "hello from the console"}]) as model:
        (dirs["config"] / "config.json").write_bytes(
            orjson.dumps({"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False})
        )
        pid, fd = pty.fork()
        if pid == 0:  # the child: `i` on a pseudo-terminal
            os.execv(sys.executable, [sys.executable, "-m", "i_core", "-C", str(project), "--quiet"])
        output = b""

        def read_until(marker: bytes, timeout: float = 30) -> None:
            nonlocal output
            deadline = time.time() + scaled(timeout)
            while marker not in output and time.time() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.2)
                if ready:
                    try:
                        output += os.read(fd, 4096)
                    except OSError:
                        break
            assert marker in output, output.decode(errors="replace")

        read_until(b"> ")
        os.write(fd, b"say hello\n")
        read_until(b"hello from the console")
        os.write(fd, b"/exit\n")
        _, status = os.waitpid(pid, 0)
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    assert model.requests[0].body["messages"][-1]["content"] == "say hello"


def test_a_failed_save_is_a_session_error_and_keeps_the_last_checkpoint(tmp_path, monkeypatch):
    import errno

    import i_core.session as session_module

    session = open_session(tmp_path / "s.json", "/w", WID)
    first = [{"role": "system", "content": "sys"}]
    session.write(first)

    def full(path, data, mode=0o600, **kw):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / ".s.json.1.abcdef012345.tmp"))

    monkeypatch.setattr(session_module, "atomic_write_bytes", full)
    with pytest.raises(
        SessionError,
        match=r"s\.json: cannot save the session: .*No space left on device; the file "
        r"on disk is unchanged",
    ):
        session.write([*first, {"role": "user", "content": "more"}])
    assert session.messages == first  # what is in memory is what is on disk
    session.close()
    assert loads_safe((tmp_path / "s.json").read_bytes())["messages"] == first


def test_a_session_removes_its_lock_file_when_it_lets_go(tmp_path):
    session = open_session(tmp_path / "s.json", "/w", WID)
    assert (tmp_path / "s.json.lock").exists()
    session.write([{"role": "system", "content": "sys"}])
    session.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]
    open_session(tmp_path / "s.json", "/w", WID).close()  # free again, and again nothing is left


def test_the_project_session_folder_is_ignored_by_git_from_its_creation(tmp_path):
    project = tmp_path / "project"
    (project / ".i" / "skills").mkdir(parents=True)  # .i itself stays the project's: its skills
    open_session(session_path_for_name(str(project), "work"), str(project), WID).close()
    assert (project / ".i" / "sessions" / ".gitignore").read_text() == "*\n"
    assert not (project / ".i" / ".gitignore").exists()
    (project / ".i" / "sessions" / ".gitignore").unlink()  # the user's choice, once the folder exists
    open_session(session_path_for_name(str(project), "more"), str(project), WID).close()
    assert not (project / ".i" / "sessions" / ".gitignore").exists()
    elsewhere = tmp_path / "state" / "sessions" / "x.json"  # a session outside the project: not its folder
    open_session(elsewhere, str(project), WID).close()
    assert not (elsewhere.parent / ".gitignore").exists()


def test_a_private_session_is_locked_at_its_first_save_and_a_named_one_at_open(tmp_path):
    named = open_session(tmp_path / "named.json", "/w", WID)
    assert (tmp_path / "named.json.lock").exists()
    named.close()
    private = open_session(tmp_path / "private.json", "/w", WID, private=True)
    assert not (tmp_path / "private.json.lock").exists()
    private.write([{"role": "system", "content": "sys"}])
    assert (tmp_path / "private.json.lock").exists()
    with pytest.raises(SessionError, match="in use by another i process"):
        open_session(tmp_path / "private.json", "/w", WID)
    private.close()
    open_session(tmp_path / "private.json", "/w", WID, private=True).close()  # it exists now: locked at open


def test_every_save_records_the_core_that_wrote_it(tmp_path):
    from i_core.__about__ import __version__

    session = open_session(tmp_path / "s.json", "/w", WID)
    session.meta["written_by"] = {"package": "i-core", "version": "0.0.1"}  # an older core's session
    session.write([{"role": "system", "content": "sys"}])
    session.close()
    saved = orjson.loads((tmp_path / "s.json").read_bytes())
    assert saved["meta"]["written_by"] == {"package": "i-core", "version": __version__}


@pytest.mark.parametrize(
    ("written_by", "warned"),
    [
        ({"package": "i-core", "version": "99.0.0"}, True),
        ({"package": "i-core", "version": "0.0.1"}, False),
        ({"package": "other", "version": "99.0.0"}, False),
        ("garbage", False),
        (None, False),
    ],
)
def test_a_session_a_newer_core_wrote_warns_in_one_line(tmp_path, written_by, warned):
    meta = {} if written_by is None else {"written_by": written_by}
    doc = {"format": "i-session/1", "workspace": "/w", "workspace_id": WID, "messages": [], "meta": meta}
    (tmp_path / "s.json").write_bytes(orjson.dumps(doc))
    lines: list[str] = []
    session = open_session(tmp_path / "s.json", "/w", WID, warn=lines.append)
    session.close()
    assert len(lines) == (1 if warned else 0)
    if warned:
        assert "was written by i-core 99.0.0, newer than this i-core" in lines[0] and "\n" not in lines[0]


def test_a_run_on_a_newer_core_s_session_warns_and_goes_on(dirs, project, run_i):
    path = project / ".i" / "sessions" / "s.json"
    path.parent.mkdir(parents=True)
    from i_protocol.workspace import canonical_workspace, workspace_id_for

    workspace = canonical_workspace(project)
    doc = {
        "format": "i-session/1",
        "workspace": workspace,
        "workspace_id": workspace_id_for(workspace, dirs["data"]),
        "messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
        ],
        "meta": {"written_by": {"package": "i-core", "version": "99.0.0"}, "a_field_from_the_future": 1},
    }
    path.write_bytes(orjson.dumps(doc))
    with ScriptedModel([{"text": "still works"}]) as model:
        config = {"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        result = run_i("-C", str(project), "--session-name", "s", "again")
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.decode().splitlines() if "newer than this i-core" in line]
    assert len(warnings) == 1 and warnings[0].startswith("i: warning: ")
    saved = orjson.loads(path.read_bytes())
    assert saved["meta"]["written_by"]["version"] != "99.0.0"
    assert saved["meta"]["a_field_from_the_future"] == 1  # meta it does not know is kept
