from __future__ import annotations

import os
import pty
import select
import sys
import time

import orjson
import pytest

from i_core.errors import SessionError
from i_core.scripted import ScriptedModel
from i_core.session import dumps_safe, loads_safe, open_session, session_path_for_name

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
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(
            {"protocol": "openai", "base_url": model.base_url, "model": "m", "stream": False}))
        pid, fd = pty.fork()
        if pid == 0:  # the child: `i` on a pseudo-terminal
            os.execv(sys.executable, [sys.executable, "-m", "i_core", "-C", str(project), "--quiet"])
        output = b""

        def read_until(marker: bytes, timeout: float = 30) -> None:
            nonlocal output
            deadline = time.time() + timeout
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
