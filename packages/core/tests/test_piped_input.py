"""Piped input: the real `i` process with stdin a pipe, a file, /dev/null or a silent open pipe."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time

import orjson
import pytest

from i_core.piped import read_piped
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

CODE = 'def hello():\n    print("hello")\n'


@pytest.fixture
def configured(dirs):
    def write(base_url: str) -> None:
        config = {"protocol": "openai", "base_url": base_url, "model": "scripted-1", "max_tokens": 256}
        config.update(retries=0, timeout=scaled(30), stream=False, budget={"context_window": 100000})
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))

    return write


def i_argv(project, *args: str) -> list[str]:
    return [sys.executable, "-m", "i_core", "-C", str(project), *args]


def user_content(model: ScriptedModel) -> object:
    return model.requests[0].body["messages"][-1]["content"]


def test_a_pipe_is_attached_before_the_task(configured, project) -> None:
    with ScriptedModel([{"text": "It prints hello."}]) as model:
        configured(model.base_url)
        done = subprocess.run(
            i_argv(project, "explain this code"), input=CODE.encode(), capture_output=True, timeout=scaled(60)
        )
    assert done.returncode == 0, done.stderr
    attached, task = user_content(model)  # type: ignore[misc]
    assert task == {"type": "text", "text": "explain this code"}
    assert attached == {
        "type": "text",
        "text": f"[piped input (stdin), {len(CODE)} bytes]\n{CODE}",
    }  # no _stdin on the wire
    assert f"[i] attached stdin: {len(CODE)} bytes, 2 lines" in done.stderr.decode()


def test_a_regular_file_is_attached_and_keeps_its_marker_in_the_session(configured, project, tmp_path) -> None:
    source = tmp_path / "hello.py"
    source.write_text(CODE)
    with ScriptedModel([{"text": "ok"}]) as model, source.open("rb") as stdin:
        configured(model.base_url)
        done = subprocess.run(
            i_argv(project, "--session-name", "s", "explain"), stdin=stdin, capture_output=True, timeout=scaled(60)
        )
    assert done.returncode == 0, done.stderr
    saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())
    parts = saved["messages"][1]["content"]
    assert parts[0]["_stdin"] is True and parts[0]["text"].endswith(CODE) and parts[1]["text"] == "explain"


def test_dev_null_and_a_terminal_are_never_read(configured, project) -> None:
    with ScriptedModel([{"text": "ok"}]) as model:
        configured(model.base_url)
        done = subprocess.run(
            i_argv(project, "just this"), stdin=subprocess.DEVNULL, capture_output=True, timeout=scaled(60)
        )
    assert done.returncode == 0, done.stderr
    assert user_content(model) == "just this"
    assert b"stdin" not in done.stderr


def test_an_open_silent_stdin_does_not_hang_the_run(configured, project, tmp_path) -> None:
    """A program that starts `i "task"` and never writes to nor closes its stdin."""
    with ScriptedModel([{"text": "ok"}]) as model:
        configured(model.base_url)
        with (tmp_path / "err").open("w+b") as err:
            process = subprocess.Popen(
                i_argv(project, "the task"), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err
            )
            try:
                code = process.wait(timeout=scaled(60))  # its stdin stays open all along
            finally:
                process.kill()
                assert process.stdin is not None
                process.stdin.close()
            err.seek(0)
            said = err.read().decode()
    assert code == 0, said
    assert user_content(model) == "the task"
    assert "[i] stdin: nothing arrived within 2 s; nothing attached" in said


def test_a_slow_pipe_is_read_to_its_end(configured, project) -> None:
    with ScriptedModel([{"text": "ok"}]) as model:
        configured(model.base_url)
        process = subprocess.Popen(
            i_argv(project, "the task"), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert process.stdin is not None

        def produce() -> None:
            assert process.stdin is not None
            process.stdin.write(b"first\n")
            process.stdin.flush()
            time.sleep(0.5)  # a producer that pauses (inside the idle wait), then ends
            process.stdin.write(b"second\n")
            process.stdin.close()

        producer = threading.Thread(target=produce)
        producer.start()
        producer.join()
        process.stdin = None  # the producer closed it; communicate() must not touch it
        _out, err = process.communicate(timeout=scaled(60))
    assert process.returncode == 0, err
    attached, _task = user_content(model)  # type: ignore[misc]
    assert attached["text"].endswith("first\nsecond\n")


def test_more_than_256_kib_is_cut_and_said(configured, project) -> None:
    big = ("x" * 99 + "\n") * 3000  # 300,000 bytes
    with ScriptedModel([{"text": "ok"}]) as model:
        configured(model.base_url)
        done = subprocess.run(
            i_argv(project, "--quiet", "summarise"), input=big.encode(), capture_output=True, timeout=scaled(60)
        )
    assert done.returncode == 0, done.stderr
    attached, _task = user_content(model)  # type: ignore[misc]
    assert attached["text"].startswith("[piped input (stdin), 262,144 bytes, cut at 256 KiB]\n")
    assert len(attached["text"].split("\n", 1)[1]) == 256 * 1024
    assert "(cut at 256 KiB: the rest was not read)" in done.stderr.decode()  # said even with --quiet


def test_binary_input_is_not_attached(configured, project) -> None:
    with ScriptedModel([{"text": "ok"}]) as model:
        configured(model.base_url)
        done = subprocess.run(
            i_argv(project, "what is it"), input=b"\x89PNG\r\n\x1a\n\0\0", capture_output=True, timeout=scaled(60)
        )
    assert done.returncode == 0, done.stderr
    assert user_content(model) == "what is it"
    assert "binary data, not attached" in done.stderr.decode()


def test_without_a_task_stdin_stays_one_request_per_line(configured, project) -> None:
    with ScriptedModel([{"text": "one"}, {"text": "two"}]) as model:
        configured(model.base_url)
        done = subprocess.run(i_argv(project), input=b"first\nsecond\n", capture_output=True, timeout=scaled(60))
    assert done.returncode == 0, done.stderr
    assert [r.body["messages"][-1]["content"] for r in model.requests] == ["first", "second"]


# -- the reader itself, on real pipes in this process (the bounds made small) ------------------------


def test_the_reader_stops_at_its_total_wait_when_the_pipe_stays_open() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"some output\n")  # then the producer keeps the pipe open, silent
        piped = read_piped(read_end, first_wait=5, max_wait=0.5)
        assert piped is not None and piped.text == "some output\n" and piped.stopped and not piped.cut
        assert "(stdin was still open after 60 s: the rest was not read)" in piped.note()
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_reader_attaches_nothing_when_nothing_comes_and_waits_no_longer() -> None:
    read_end, write_end = os.pipe()
    try:
        piped = read_piped(read_end, first_wait=0.2, max_wait=60)
        assert piped is not None and piped.text is None and piped.silent
    finally:
        os.close(read_end)
        os.close(write_end)


def test_the_reader_never_reads_a_character_device() -> None:
    with open(os.devnull, "rb") as null:
        assert read_piped(null.fileno()) is None
