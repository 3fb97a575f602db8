"""The hard cases of the wire, through real processes: undecodable text, a worker that dies while
a grandchild still holds its stdout, and a host that is SIGKILLed mid-call."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from i_protocol import CallError, FrameError, decode_frame, encode_frame
from i_protocol.host import WorkerProcess
from i_protocol.jsonsafe import restore_surrogates, without_surrogates
from i_protocol.testing import alive, scaled, wait_dead
from i_protocol.workspace import workspace_id_for

LATIN1 = b"caf\xe9"  # "café" in ISO-8859-1: not UTF-8


@pytest.fixture
def spawn(worker_env):
    started: list[WorkerProcess] = []

    def start(argv, **kwargs):
        worker = WorkerProcess.spawn(argv, env=worker_env, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


def read_pid(path: Path, within: float = 20.0) -> int:
    stop = time.monotonic() + scaled(within)
    while time.monotonic() < stop:
        try:
            text = path.read_text()
            if text.endswith("\n"):
                return int(text)
        except (FileNotFoundError, ValueError):
            pass
        time.sleep(0.02)
    raise AssertionError(f"{path} was not written within {within}s")


# -- undecodable text -------------------------------------------------------------------------


def test_lone_surrogates_are_encoded_losslessly_as_json_escapes():
    from i_protocol.jsonsafe import dumps_safe, loads_safe

    frame = encode_frame({"id": 1, "data": {"path": "/tmp/caf\udce9", "pair": "\U0001f600"}})
    assert b"caf\\udce9" in frame and frame.endswith(b"\n") and frame.count(b"\n") == 1
    frame.decode("utf-8")  # always valid UTF-8 on the wire
    assert decode_frame(frame) == {"id": 1, "data": {"path": "/tmp/caf\udce9", "pair": "\U0001f600"}}
    # Python's json (what a worker written with it sends) and dumps_safe agree.
    assert loads_safe(b'{"a":"caf\\udce9","b":"\\ud800"}') == {"a": "caf\udce9", "b": "\ud800"}
    assert loads_safe(dumps_safe({"k\udcff": ["\udcff"]}, indent=True)) == {"k\udcff": ["\udcff"]}
    assert os.fsencode(decode_frame(frame)["data"]["path"]) == b"/tmp/" + LATIN1


def test_the_lossless_fallback_stays_as_strict_as_orjson():
    from i_protocol.jsonsafe import loads_safe, printable

    for text in (b'{"a":"\\udce9","n":NaN}', b'{"a":"\\udce9","n":1e400}', b'{"a":"\\udce9",}'):
        with pytest.raises(orjson.JSONDecodeError):
            loads_safe(text)
    with pytest.raises(orjson.JSONDecodeError):
        loads_safe(b'{"a":"caf\xe9"}')  # a raw Latin-1 byte is never accepted
    with pytest.raises(FrameError, match="not JSON-serialisable"):
        encode_frame({"x": object(), "y": "\udcff"})
    assert printable("caf\udce9") == "caf\\xe9"


def test_a_request_with_an_undecodable_name_round_trips_through_a_real_worker(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    assert worker.call("tool", {"name": "echo", "arguments": {"text": "caf\udce9 \ud800"}}) == {
        "output": "caf\udce9 \ud800"
    }
    assert worker.call("surrogate", {}) == {"text": "bad \udcff"}
    assert not worker.broken


def test_a_worker_never_gets_a_lone_surrogate_and_what_it_passes_through_comes_back_whole(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    messages = [{"role": "tool", "content": "caf\udce9 ok"}, {"role": "user", "content": "plain \ufffd"}]
    reply = worker.call("strict", {"messages": messages})
    assert "\\udce9" not in reply["seen"] and "caf\\ufffd ok" in reply["seen"]  # the worker saw U+FFFD
    assert reply["kept"] == messages  # unchanged strings are the host's originals again
    assert reply["changed"] == "caf\ufffd ok!"  # a string the worker changed keeps what it saw
    assert not worker.broken


def test_without_surrogates_maps_each_replaced_string_back_unless_ambiguous():
    value = {"a": ["x\udce9", {"k\udc80": "y\ud800z"}], "b": "x\udce8", "c": 3}
    clean, originals = without_surrogates(value)
    assert clean == {"a": ["x\ufffd", {"k\ufffd": "y\ufffdz"}], "b": "x\ufffd", "c": 3}
    assert orjson.dumps(clean)  # strict JSON now
    # "x\udce9" and "x\udce8" both became "x\ufffd": which one a worker meant cannot be known.
    assert originals == {"k\ufffd": "k\udc80", "y\ufffdz": "y\ud800z"}
    assert restore_surrogates(clean, originals) == {**value, "a": ["x\ufffd", value["a"][1]], "b": "x\ufffd"}
    assert without_surrogates({"plain": ["text"]}) == ({"plain": ["text"]}, {})


def test_a_real_replacement_character_makes_the_same_replaced_text_ambiguous():
    clean, originals = without_surrogates(["caf\ufffd", "caf\udce9", "ok\udc80"])
    assert clean == ["caf\ufffd", "caf\ufffd", "ok\ufffd"]
    assert originals == {"ok\ufffd": "ok\udc80"}  # "caf\ufffd" in an answer could be either one


def test_a_worker_frame_with_the_escaped_surrogate_decodes(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("surrogate_escape"))
    reply = worker.call("x", {"workspace": "/p/caf\udce9"})
    assert reply == {"name": "caf\udce9", "echo": {"workspace": "/p/caf\udce9"}}


def test_a_worker_frame_with_raw_latin1_bytes_says_so_clearly(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("latin1_bytes"))
    with pytest.raises(CallError) as info:
        worker.call("x", {})
    message = str(info.value)
    assert "is not valid UTF-8 (byte 0xe9 at offset 27)" in message
    assert "undecodable text must be sent as a JSON escape" in message
    assert "logs belong on stderr" not in message


def test_a_worker_frame_with_broken_json_is_not_called_a_log_line(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("broken_json"))
    with pytest.raises(
        CallError,
        match=r"sent an unreadable response: frame is not valid JSON \(.+\): '\{\"id\":1,\"data\":\{\"name\":\}'",
    ) as info:
        worker.call("x", {})
    assert "logs belong on stderr" not in str(info.value)


def test_a_latin1_workspace_gets_an_id_and_the_registry_stays_readable(tmp_path):
    folder = os.fsdecode(os.fsencode(str(tmp_path)) + b"/" + LATIN1)
    os.mkdir(os.fsencode(folder))
    data_dir = tmp_path / "data"
    first = workspace_id_for(folder, data_dir)
    assert workspace_id_for(folder, data_dir) == first
    # A second process (no in-memory state) finds the same binding in the file.
    code = "import sys; from i_protocol.workspace import workspace_id_for as f; print(f(sys.argv[1], sys.argv[2]))"
    done = subprocess.run(
        [sys.executable, "-c", code, folder, str(data_dir)],
        capture_output=True,
        timeout=scaled(60),
        env={**os.environ, "PYTHONUTF8": "1"},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().strip() == first
    registry = (data_dir / "workspaces.json").read_bytes()
    registry.decode("utf-8")
    assert b"caf\\udce9" in registry


# -- a worker that exits while a grandchild holds its stdout ----------------------------------


def test_a_worker_that_exits_mid_call_is_noticed_at_once_despite_a_grandchild(
    spawn, misbehaving_argv, worker_env, tmp_path
):
    pid_file = tmp_path / "grandchild.pid"
    worker_env["CHILD_PID_FILE"] = str(pid_file)
    worker = spawn(misbehaving_argv("exit_leaving_grandchild"))
    # Noticed as an exit, not as the 15 s deadline passing (that would be a CallTimeout).
    with pytest.raises(CallError, match=r"^worker python\S* exited with status 3 during the call"):
        worker.call("x", {"status": 3}, timeout=scaled(15.0))
    assert worker.broken
    grandchild = int(pid_file.read_text())
    assert alive(grandchild)  # it really did hold the pipe open
    worker.kill()
    assert wait_dead([grandchild], 5.0) == []


def test_an_answer_written_just_before_exit_is_still_read(spawn, fixture_argv):
    # The exit watch must never drop a complete answer that is already in the pipe.
    worker = spawn(
        [
            sys.executable,
            "-c",
            textwrap.dedent("""
        import os, sys
        line = sys.stdin.buffer.readline()
        os.write(1, b'{"id":1,"data":{"last":true}}\\n')
        os._exit(0)
    """),
        ]
    )
    assert worker.call("x", {}) == {"last": True}


# -- a host SIGKILLed mid-call ----------------------------------------------------------------

_STUBBORN = """
import os, signal, subprocess, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
sys.stdin.buffer.readline()
child = subprocess.Popen([sys.executable, "-c",
    "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
with open(os.environ["PID_FILE"] + ".tmp", "w") as handle:
    handle.write(f"{os.getpid()} {child.pid}\\n")
os.replace(os.environ["PID_FILE"] + ".tmp", os.environ["PID_FILE"])
while True:            # busy and deaf: never reads stdin again, so never sees end of input
    time.sleep(1)
"""

_HOST = """
import os, sys
from i_protocol.host import WorkerProcess
from i_protocol.jsonsafe import restore_surrogates, without_surrogates
worker = WorkerProcess.spawn([sys.executable, "-c", sys.argv[1]], env=dict(os.environ))
worker.call("busy", {}, timeout=3600)
"""


def test_workers_and_their_children_die_with_a_sigkilled_host(tmp_path):
    pid_file = tmp_path / "pids"
    env = {**os.environ, "PID_FILE": str(pid_file)}
    host = subprocess.Popen([sys.executable, "-c", _HOST, _STUBBORN], env=env, stdin=subprocess.DEVNULL)
    pids: list[int] = []
    try:
        stop = time.monotonic() + scaled(30)
        while not pid_file.exists() and time.monotonic() < stop:
            time.sleep(0.02)
        pids = [int(p) for p in pid_file.read_text().split()]
        assert all(alive(pid) for pid in pids)
        host.send_signal(signal.SIGKILL)
        host.wait(10)
        assert wait_dead(pids, 5.0) == []
    finally:
        host.kill()
        host.wait(10)
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
