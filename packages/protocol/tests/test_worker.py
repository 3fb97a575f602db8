from __future__ import annotations

import io
import subprocess

import orjson
import pytest

from i_protocol import MAX_FRAME_BYTES, PROTOCOL_VERSION, Worker, WorkerError, decode_frame
from i_protocol.testing import scaled


def make_worker() -> Worker:
    worker = Worker("demo", "1.2.3")

    @worker.hook("before_turn")
    def before_turn(data, request):
        data["seen"] = data.get("seen", 0) + 1
        return data

    @worker.hook("explode", extension=True)
    def explode(data, request):
        raise KeyError("missing")

    @worker.hook("refuse", extension=True)
    def refuse(data, request):
        raise WorkerError("refused: budget.tokenizer 'cl100k_base' is not supported")

    @worker.hook("bad_return", extension=True)
    def bad_return(data, request):
        return "text"

    @worker.tool("upper")
    def upper(arguments, request):
        return arguments["text"].upper()

    @worker.tool("no_output")
    def no_output(arguments, request):
        return {"images": []}

    return worker


def serve(worker: Worker, payload: bytes) -> tuple[list[dict], int]:
    reader, writer = io.BytesIO(payload), io.BytesIO()
    code = worker.serve(reader, writer)
    lines = writer.getvalue().splitlines()
    return [decode_frame(line) for line in lines], code


def frames(*messages: dict) -> bytes:
    return b"".join(orjson.dumps(m) + b"\n" for m in messages)


def test_hook_returns_full_data_and_unhandled_events_come_back_unchanged():
    responses, code = serve(
        make_worker(),
        frames(
            {"id": 1, "event": "before_turn", "data": {"messages": [], "keep": "me"}},
            {"id": 2, "event": "after_save", "data": {"path": "/x", "n": [1, 2]}},
        ),
    )
    assert code == 0
    assert responses == [
        {"id": 1, "data": {"messages": [], "keep": "me", "seen": 1}},
        {"id": 2, "data": {"path": "/x", "n": [1, 2]}},
    ]


def test_star_hook_receives_every_event():
    worker = Worker("star", "0")

    @worker.hook("*")
    def every(data, request):
        return {**data, "event": request.event}

    responses, _ = serve(worker, frames({"id": 9, "event": "finish", "data": {}}))
    assert responses == [{"id": 9, "data": {"event": "finish"}}]


def test_handler_exceptions_become_error_frames_and_the_loop_goes_on(capsys):
    responses, code = serve(
        make_worker(),
        frames(
            {"id": 1, "event": "explode", "data": {}},
            {"id": 2, "event": "refuse", "data": {}},
            {"id": 3, "event": "bad_return", "data": {}},
            {"id": 4, "event": "before_turn", "data": {}},
        ),
    )
    assert code == 0
    assert responses[0]["id"] == 1 and "KeyError" in responses[0]["error"]
    assert responses[1] == {"id": 2, "error": "refused: budget.tokenizer 'cl100k_base' is not supported"}
    assert responses[2]["id"] == 3 and "returned str, expected an object" in responses[2]["error"]
    assert responses[3] == {"id": 4, "data": {"seen": 1}}
    assert "KeyError" in capsys.readouterr().err  # the traceback goes to stderr


def test_tool_dispatch_and_tool_errors():
    responses, _ = serve(
        make_worker(),
        frames(
            {"id": 1, "event": "tool", "data": {"name": "upper", "arguments": {"text": "hi"}}},
            {"id": 2, "event": "tool", "data": {"name": "nope", "arguments": {}}},
            {"id": 3, "event": "tool", "data": {"name": "upper", "arguments": "not an object"}},
            {"id": 4, "event": "tool", "data": {"name": "no_output", "arguments": {}}},
        ),
    )
    assert responses[0] == {"id": 1, "data": {"output": "HI"}}
    assert responses[1] == {"id": 2, "error": "unknown tool 'nope'; i-demo provides: no_output, upper"}
    assert "arguments must be an object" in responses[2]["error"]
    assert "no string 'output'" in responses[3]["error"]


@pytest.mark.parametrize(
    "frame, message",
    [
        ({"id": 1, "event": "x", "data": [1]}, "request data must be an object, got list"),
        ({"id": 1, "event": "", "data": {}}, "event must be a non-empty string"),
        ({"id": 1, "event": "x", "data": {}, "workspace_id": "not-a-uuid"}, "workspace_id must be a UUID"),
        ({"id": 1, "event": "x", "data": {}, "workspace": 5}, "workspace must be a non-empty string"),
        (
            {
                "id": 1,
                "event": "x",
                "data": {},
                "paths": {"config_dir": "rel/c", "data_dir": "/d", "cache_dir": "/k", "runtime_dir": "/r"},
            },
            "paths.config_dir must be absolute",
        ),
        (
            {
                "id": 1,
                "event": "x",
                "data": {},
                "paths": {"config_dir": "/a/../etc", "data_dir": "/d", "cache_dir": "/k", "runtime_dir": "/r"},
            },
            "must not contain '..'",
        ),
        (
            {
                "id": 1,
                "event": "x",
                "data": {},
                "paths": {"config_dir": "/c", "data_dir": "/k/data", "cache_dir": "/k", "runtime_dir": "/r"},
            },
            "paths.data_dir (/k/data) must not lie under paths.cache_dir (/k)",
        ),
        (
            {
                "id": 1,
                "event": "x",
                "data": {},
                "paths": {"config_dir": "/r/conf", "data_dir": "/d", "cache_dir": "/k", "runtime_dir": "/r"},
            },
            "must not lie under paths.runtime_dir",
        ),
        ({"id": 1, "event": "x", "data": {}, "paths": {"config_dir": "/c"}}, "paths is missing"),
        ({"id": 1, "event": "x", "data": {}, "paths": "/c"}, "paths must be an object"),
    ],
)
def test_bad_request_context_gets_a_clear_error_frame(frame, message):
    responses, code = serve(make_worker(), frames(frame))
    assert code == 0
    assert responses[0]["id"] == 1
    assert message in responses[0]["error"]


def test_invalid_json_with_a_readable_id_gets_an_error_frame_and_the_loop_goes_on():
    payload = b'{"id": 5, "event": "x", "data": {broken\n' + frames({"id": 6, "event": "before_turn", "data": {}})
    responses, code = serve(make_worker(), payload)
    assert code == 0
    assert responses[0]["id"] == 5 and "not valid JSON" in responses[0]["error"]
    assert responses[1] == {"id": 6, "data": {"seen": 1}}


def test_unreadable_request_without_id_stops_with_a_message_on_stderr(capsys):
    responses, code = serve(make_worker(), b"garbage\n" + frames({"id": 2, "event": "x", "data": {}}))
    assert responses == [] and code != 0
    assert "unreadable request" in capsys.readouterr().err


def test_request_without_id_stops_with_a_message(capsys):
    responses, code = serve(make_worker(), frames({"event": "x", "data": {}}))
    assert responses == [] and code != 0
    assert "no valid id" in capsys.readouterr().err


def test_oversized_frame_gets_an_error_frame_and_the_next_frame_is_served():
    big = b'{"id":7,"event":"x","data":{"s":"' + b"a" * MAX_FRAME_BYTES + b'"}}\n'
    responses, code = serve(make_worker(), big + frames({"id": 8, "event": "before_turn", "data": {}}))
    assert code == 0
    assert responses[0]["id"] == 7 and "exceeds the 50331648-byte limit" in responses[0]["error"]
    assert responses[1] == {"id": 8, "data": {"seen": 1}}


def test_oversized_frame_without_id_stops(capsys):
    big = b'{"event":"x","data":{"s":"' + b"a" * MAX_FRAME_BYTES + b'"}}\n'
    responses, code = serve(make_worker(), big)
    assert responses == [] and code != 0
    assert "its id cannot be read" in capsys.readouterr().err


def test_missing_final_newline_is_an_error():
    responses, code = serve(make_worker(), b'{"id":3,"event":"before_turn","data":{}}')
    assert code != 0
    assert responses == [{"id": 3, "error": "request frame has no terminating newline (input ended mid-frame)"}]


def test_response_that_cannot_be_encoded_becomes_an_error_frame():
    worker = Worker("s", "0")

    @worker.hook("x", extension=True)
    def bad(data, request):
        return {"text": object()}

    @worker.hook("y", extension=True)
    def undecodable(data, request):
        return {"text": "\udcff"}  # a lone surrogate is not a reason to refuse: it is escaped

    responses, _ = serve(worker, frames({"id": 1, "event": "x", "data": {}}, {"id": 2, "event": "y", "data": {}}))
    assert responses[0]["id"] == 1 and "response rejected" in responses[0]["error"]
    assert responses[1] == {"id": 2, "data": {"text": "\udcff"}}


def test_registration_rules():
    worker = Worker("r", "0")
    worker.hook("a", extension=True)(lambda d, r: d)
    with pytest.raises(ValueError):
        worker.hook("a", extension=True)(lambda d, r: d)
    with pytest.raises(ValueError):
        worker.hook("tool")(lambda d, r: d)
    worker.tool("t")(lambda a, r: "")
    with pytest.raises(ValueError):
        worker.tool("t")(lambda a, r: "")
    assert worker.events == ["a", "tool"] and worker.tools == ["t"]


def test_version_line_names_distribution_and_protocol(fixture_argv):
    result = subprocess.run(fixture_argv("--version"), capture_output=True, text=True, check=True)
    assert result.stdout.strip() == f"i-fixture 9.9.9 (i-protocol {PROTOCOL_VERSION})"


def test_unknown_argument_and_missing_config_file_exit_2(fixture_argv, tmp_path):
    result = subprocess.run(fixture_argv("--frobnicate"), capture_output=True, text=True, input="")
    assert result.returncode == 2 and "unknown argument '--frobnicate'" in result.stderr
    result = subprocess.run(
        fixture_argv("--config", str(tmp_path / "none.json")), capture_output=True, text=True, input=""
    )
    assert result.returncode == 2 and "file does not exist" in result.stderr


def test_commands_dispatch_to_subcommands():
    worker = Worker("c", "0")
    seen = []
    worker.command("report")(lambda argv: seen.append(argv) or 4)
    assert worker.main(["report", "-C", "/x"]) == 4
    assert seen == [["-C", "/x"]]


def test_stdout_carries_only_frames_even_when_a_handler_prints(fixture_argv, worker_env):
    payload = frames({"id": 1, "event": "print", "data": {}}, {"id": 2, "event": "before_turn", "data": {}})
    result = subprocess.run(fixture_argv(), input=payload, capture_output=True, env=worker_env, timeout=scaled(30))
    assert result.returncode == 0
    lines = result.stdout.splitlines()
    assert [orjson.loads(line) for line in lines] == [{"id": 1, "data": {}}, {"id": 2, "data": {"turns": 1}}]
    assert b"stray print" in result.stderr and b"raw write to fd 1" in result.stderr


def test_bad_frames_through_a_real_process_never_put_a_traceback_on_stdout(fixture_argv, worker_env):
    payload = (
        b'{"id":1,"event":"x","data":[]}\n'
        b'{"id":2,"event":"crash","data":{}}\n'
        b'{"id":3,"event":"x","data":{},"paths":{"config_dir":"/k/c","data_dir":"/d","cache_dir":"/k","runtime_dir":"/r"}}\n'
        b"{not json at all\n"
    )
    result = subprocess.run(fixture_argv(), input=payload, capture_output=True, env=worker_env, timeout=scaled(30))
    out = [orjson.loads(line) for line in result.stdout.splitlines()]
    assert [frame["id"] for frame in out] == [1, 2, 3]
    assert all("error" in frame for frame in out)
    assert b"Traceback" not in result.stdout and b"ZeroDivisionError" in result.stderr
    assert result.returncode == 2 and b"unreadable request" in result.stderr


def test_config_path_is_where_the_config_is_read_even_when_absent(tmp_path):
    from i_protocol import Worker

    worker = Worker("notes", "0")
    assert worker.config_path(str(tmp_path)) == str(tmp_path / "notes.json")
    assert worker.load_config(str(tmp_path)).path is None  # absent: an empty config, and no path


def test_exit_fast_runs_atexit_flushes_and_exits_with_the_code(tmp_path):
    import subprocess
    import sys

    code = (
        "import atexit, sys\n"
        "from i_protocol import exit_fast\n"
        "atexit.register(lambda: open(sys.argv[1], 'w').write('ran'))\n"
        "sys.stdout.write('buffered, not yet flushed')\n"
        "exit_fast(3)\n"
    )
    marker = tmp_path / "atexit"
    done = subprocess.run([sys.executable, "-c", code, str(marker)], capture_output=True, text=True, timeout=scaled(60))
    assert (done.returncode, done.stdout, marker.read_text()) == (3, "buffered, not yet flushed", "ran")
