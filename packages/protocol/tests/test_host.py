from __future__ import annotations

import os
import time

import pytest

from i_protocol import CallError, CallTimeout, ErrorFrame
from i_protocol.host import WorkerProcess, parse_response
from i_protocol.testing import scaled


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
    with pytest.raises(CallTimeout, match="did not answer within the deadline"):  # not the 60 s sleep's end
        worker.call("sleep", {"seconds": 60}, timeout=0.5)
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
        ("banner", "sent an unreadable response: not a JSON frame: 'Worker v1 starting up!'"),
        ("wrong_id", "answered id 8 to request id 1"),
        ("list_data", "with list data, expected an object"),
        ("exit_mid", "closed its output mid-frame (exit status 1"),
        ("huge", "over the 50331648-byte limit"),
    ],
)
def test_protocol_violations_fail_the_call_clearly(spawn, misbehaving_argv, mode, message):
    worker = spawn(misbehaving_argv(mode))
    with pytest.raises(CallError) as info:
        worker.call("before_turn", {"messages": []}, timeout=scaled(30))
    assert message in str(info.value)
    assert worker.broken


def test_oversized_request_is_refused_before_writing(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("echo"))
    with pytest.raises(CallError, match="exceeds the 50331648-byte limit"):
        worker.call("x", {"blob": "a" * (48 * 1024 * 1024)})


def test_large_frames_within_the_limit_round_trip(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    reply = worker.call("big", {"size": 32 * 1024 * 1024}, timeout=scaled(60))
    assert len(reply["blob"]) == 32 * 1024 * 1024


def test_worker_response_with_lone_surrogate_round_trips(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    assert worker.call("surrogate", {}) == {"text": "bad \udcff"}


def test_stderr_flood_is_drained_and_bounded(spawn, misbehaving_argv):
    worker = spawn(misbehaving_argv("stderr_flood"), stderr_limit=4096)
    # 10 MiB of stderr before the answer: the worker would block forever if nobody drained it.
    assert worker.call("x", {"ok": True}, timeout=scaled(30)) == {"ok": True}
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
    with pytest.raises(CallError, match=r"^worker no-such-worker could not be started: No such file") as info:
        WorkerProcess.spawn([str(tmp_path / "no-such-worker")])
    assert isinstance(info.value.__cause__, FileNotFoundError)  # the cause is kept


def test_close_is_graceful(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    worker.call("before_turn", {})
    worker.close()
    assert worker.process.returncode == 0


def test_a_call_error_names_the_worker_once_and_keeps_the_problem_apart(spawn, fixture_argv):
    worker = spawn(fixture_argv(), name="fixture")
    with pytest.raises(ErrorFrame) as info:
        worker.call("complain_and_fail", {})
    error = info.value
    assert str(error) == "worker fixture answered with an error: budget.json: 'threshold' must be a number"
    assert error.worker == "fixture"
    assert error.problem == "answered with an error: budget.json: 'threshold' must be a number"
    # An error frame is the worker's own explanation: its stderr is not added to it.
    assert "a note on stderr" not in str(error)


def test_a_crash_ends_with_the_stderr_tail_once(spawn, fixture_argv):
    worker = spawn(fixture_argv(), name="fixture")
    with pytest.raises(CallError) as info:
        worker.call("exit", {"stderr": "Traceback: the reason it died\n"})
    message = str(info.value)
    assert message.startswith("worker fixture closed its output before answering (exit status 3)")
    assert message.endswith("; stderr: Traceback: the reason it died")
    assert message.count("the reason it died") == 1 and message.count("fixture") == 1


def test_a_timeout_says_how_long_the_deadline_was(spawn, fixture_argv):
    worker = spawn(fixture_argv(), name="fixture")
    with pytest.raises(CallTimeout, match=r"^worker fixture did not answer within the deadline of 0\.5 s$"):
        worker.call("sleep", {"seconds": 60}, timeout=0.5)


@pytest.mark.parametrize(
    "line, kind, problem",
    [
        (b'{"id":3,"data":{"ok":true}}\n', None, None),
        (b'{"id":3,"error":"no budget.json"}\n', ErrorFrame, "answered with an error: no budget.json"),
        (b'{"id":3,"error":{"code":7}}\n', ErrorFrame, 'answered with an error: {"code":7}'),
        (b'{"id":4,"data":{}}\n', CallError, "answered id 4 to request id 3"),
        (b'{"id":true,"data":{}}\n', CallError, "answered id True to request id 3"),
        (b'{"id":3,"data":[1]}\n', CallError, "answered with list data, expected an object"),
        (b'{"id":3}\n', CallError, "answered with NoneType data, expected an object"),
        (b"[3]\n", CallError, "sent an unreadable response: frame must be a JSON object, got list"),
        (b"ready!\n", CallError, "sent an unreadable response: not a JSON frame: 'ready!'"),
    ],
)
def test_parse_response_reads_one_answer_through_the_framing(line, kind, problem):
    if kind is None:
        assert parse_response(line, 3) == {"ok": True}
        return
    with pytest.raises(kind) as info:
        parse_response(line, 3)
    assert info.value.problem.startswith(problem)
    assert info.value.worker is None  # the host that called names the worker
