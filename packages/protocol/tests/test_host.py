from __future__ import annotations

import os
import time

import pytest

from i_protocol import CallError, CallTimeout, ErrorFrame
from i_protocol.host import WorkerProcess


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


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def test_persistent_worker_answers_sequential_calls(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    assert worker.call("before_turn", {"turns": 0}) == {"turns": 1}
    assert worker.call("before_turn", {"turns": 41}) == {"turns": 42}
    assert worker.call("tool", {"name": "echo", "arguments": {"text": "hé"}}) == {"output": "hé"}
    assert worker.call("tool", {"name": "image", "arguments": {}})["images"][0]["type"] == "image_url"


def test_error_frame_raises_error_frame_and_marks_broken(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    with pytest.raises(ErrorFrame, match="this failure was expected"):
        worker.call("fail", {})
    assert worker.broken
    with pytest.raises(CallError, match="broken"):
        worker.call("before_turn", {})


def test_timeout_is_reported_and_the_group_can_be_killed(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    started = time.monotonic()
    with pytest.raises(CallTimeout, match="did not answer within the deadline"):
        worker.call("sleep", {"seconds": 60}, timeout=0.5)
    assert time.monotonic() - started < 10
    worker.kill()
    assert worker.process.poll() is not None


def test_kill_takes_the_whole_process_group(spawn, misbehaving_argv, worker_env, tmp_path):
    pid_file = tmp_path / "child.pid"
    worker_env["CHILD_PID_FILE"] = str(pid_file)
    worker = spawn(misbehaving_argv("spawn_child_and_hang"))
    with pytest.raises(CallTimeout):
        worker.call("x", {}, timeout=3)
    child = int(pid_file.read_text())
    worker.kill()
    for _ in range(100):
        if not group_alive(worker.pid):
            break
        time.sleep(0.05)
    assert not group_alive(worker.pid)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)


@pytest.mark.parametrize(
    "mode, message",
    [
        ("banner", "not a JSON frame to stdout: 'Worker v1 starting up!'"),
        ("wrong_id", "answered id 8 to request id 1"),
        ("list_data", "with list data, expected an object"),
        ("exit_mid", "closed its output mid-frame (exit status 1"),
        ("huge", "over the 50331648-byte limit"),
    ],
)
def test_protocol_violations_fail_the_call_clearly(spawn, misbehaving_argv, mode, message):
    worker = spawn(misbehaving_argv(mode))
    with pytest.raises(CallError) as info:
        worker.call("before_turn", {"messages": []}, timeout=30)
    assert message in str(info.value)
    assert worker.broken


def test_oversized_request_is_refused_before_writing(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("echo"))
    with pytest.raises(CallError, match="exceeds the 50331648-byte limit"):
        worker.call("x", {"blob": "a" * (48 * 1024 * 1024)})


def test_large_frames_within_the_limit_round_trip(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    reply = worker.call("big", {"size": 32 * 1024 * 1024}, timeout=60)
    assert len(reply["blob"]) == 32 * 1024 * 1024


def test_worker_response_with_lone_surrogate_round_trips(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    assert worker.call("surrogate", {}) == {"text": "bad \udcff"}


def test_stderr_flood_is_drained_and_bounded(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("stderr_flood"), stderr_limit=4096)
    # 10 MiB of stderr before the answer: the worker would block forever if nobody drained it.
    assert worker.call("x", {"ok": True}, timeout=30) == {"ok": True}
    for _ in range(200):
        if worker.stderr.total >= 160 * 65536:
            break
        time.sleep(0.02)
    assert worker.stderr.total == 160 * 65536
    assert len(worker.stderr.text()) <= 4096


def test_worker_that_exits_reports_its_status_and_stderr(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    with pytest.raises(CallError, match=r"closed its output before answering \(exit status 3"):
        worker.call("exit", {})


def test_missing_executable_is_a_clear_error(tmp_path):
    with pytest.raises(CallError, match="cannot start worker"):
        WorkerProcess.spawn([str(tmp_path / "no-such-worker")])


def test_close_is_graceful(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    worker.call("before_turn", {})
    worker.close()
    assert worker.process.returncode == 0
