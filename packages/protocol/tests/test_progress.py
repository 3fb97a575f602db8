"""Progress frames (SPEC §3.4, extension ``progress``) and error frames of ``kind`` config, end to end."""

from __future__ import annotations

import time

import pytest

from i_protocol import CallError, CallTimeout, ErrorFrame
from i_protocol.host import WorkerProcess, progress_of
from i_protocol.testing import scaled


@pytest.fixture
def spawn(worker_env):
    started: list[WorkerProcess] = []

    def start(argv):
        worker = WorkerProcess.spawn(argv, env=worker_env)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.kill()


def test_progress_frames_reach_the_callback_and_keep_the_call_alive(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    seen: list[dict] = []
    # Three reports 0.4 s apart: 1.2 s in all, longer than the 0.7 s deadline each report restarts.
    answer = worker.call(
        "progress", {"count": 3, "every": 0.4}, timeout=scaled(0.7), progress=seen.append, ceiling=scaled(30)
    )
    assert answer == {"sent": [True, True, True], "wants": True}
    assert seen == [
        {"message": "step 1", "progress": 1, "total": 3},
        {"message": "step 2", "progress": 2, "total": 3},
        {"message": "step 3", "progress": 3, "total": 3},
    ]
    assert worker.call("before_turn", {"turns": 1}) == {"turns": 2}  # the stream stayed in step


def test_without_the_opt_in_a_worker_writes_no_progress(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    assert worker.call("progress", {"count": 2}) == {"sent": [False, False], "wants": False}
    assert worker.call("before_turn", {"turns": 1}) == {"turns": 2}


def test_a_worker_that_stops_reporting_times_out_after_its_last_report(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    seen: list[dict] = []
    started = time.monotonic()
    with pytest.raises(CallTimeout, match=r"did not answer or report progress within 1\.5 s"):
        worker.call("progress", {"count": 2, "every": 0.1, "then": 30}, timeout=1.5, progress=seen.append)
    assert len(seen) == 2
    assert time.monotonic() - started < scaled(5)
    assert worker.broken


def test_progress_never_outlives_the_ceiling(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    with pytest.raises(CallTimeout, match="ceiling of 1 s"):
        worker.call("progress", {"count": 50, "every": 0.2}, timeout=0.5, progress=lambda _: None, ceiling=1)


@pytest.mark.parametrize(
    ("frame", "expected"),
    [
        ({"id": 1, "data": {"progress": 1}}, None),
        ({"id": 1, "error": "x", "progress": {}}, None),
        ({"id": 1, "progress": {"message": "m" * 5000, "progress": 0.5}}, {"message": "m" * 1000, "progress": 0.5}),
        ({"id": 1, "progress": {}}, {}),
    ],
)
def test_progress_of_reads_only_progress_frames(frame, expected):
    assert progress_of(frame) == expected


@pytest.mark.parametrize(
    "body", [[], {"message": 3}, {"progress": "half"}, {"total": True}], ids=["list", "message", "progress", "total"]
)
def test_a_malformed_progress_frame_fails_the_call(body):
    with pytest.raises(CallError, match="progress frame"):
        progress_of({"id": 1, "progress": body})


def test_a_configuration_error_is_an_error_frame_of_kind_config(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    with pytest.raises(ErrorFrame) as caught:
        worker.call("bad_settings", {})
    assert caught.value.kind == "config"
    assert caught.value.message == "fixture.json: field x must be a number"


def test_other_error_frames_have_no_kind(spawn, fixture_argv):
    worker = spawn(fixture_argv())
    with pytest.raises(ErrorFrame) as caught:
        worker.call("fail", {})
    assert caught.value.kind is None
