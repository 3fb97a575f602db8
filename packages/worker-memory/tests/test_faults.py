"""The issue's faults: concurrent writers, a corrupt memory file, lone surrogates."""

from __future__ import annotations

import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from memory_harness import Env, frame, tool, tool_error

from i_memory import Limits, MemoryStore, MemoryStoreError
from i_protocol.host import WorkerProcess

WRITERS = 16
KEYS_PER_WRITER = 4


def test_sixteen_processes_writing_different_keys_keep_every_key(env: Env) -> None:
    workers = [env.spawn() for _ in range(WRITERS)]
    for worker in workers:  # every process up and serving before the race starts
        assert orjson.loads(tool(worker, env, "memory_list"))["count"] == 0
    start = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def write(index: int, worker: WorkerProcess) -> None:
        try:
            start.wait()
            for round_ in range(KEYS_PER_WRITER):
                tool(worker, env, "memory_set", key=f"writer{index}.key{round_}", value=f"value {index}/{round_}")
        except BaseException as exc:  # reported below; a thread must not swallow it
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(i, w)) for i, w in enumerate(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    entries = orjson.loads(env.memory_file.read_bytes())["entries"]
    expected = {f"writer{i}.key{r}": f"value {i}/{r}" for i in range(WRITERS) for r in range(KEYS_PER_WRITER)}
    assert entries == expected
    leftovers = [p.name for p in env.state_dir.iterdir() if p.name not in ("memory.json", "memory.json.lock")]
    assert leftovers == []  # no temporary files left behind


# -- corrupt memory file --------------------------------------------------------------------

CORRUPT_FILES = [
    pytest.param(b'{"version": 1, "entries": {"a": "b"', id="truncated-json"),
    pytest.param(b"", id="empty"),
    pytest.param(b'{"version": 1, "entries": {"a": "\xff\xfe"}}', id="invalid-utf8"),
    pytest.param(b'{"version": 1, "entries": {"a": "\\udcff"}}', id="lone-surrogate-escape"),
    pytest.param(b'["not", "an", "object"]', id="array"),
    pytest.param(b'{"version": 1, "entries": {"a": 3}}', id="non-string-value"),
    pytest.param(b'{"entries": {}}', id="no-version"),
]


def corrupt_copies(env: Env) -> list[Path]:
    return sorted(env.state_dir.glob("memory.json.corrupt-*"))


@pytest.mark.parametrize("content", CORRUPT_FILES)
def test_corrupt_file_is_reported_kept_aside_and_never_overwritten(env: Env, content: bytes) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(content)
    worker = env.spawn()
    error = tool_error(worker, env, "memory_set", key="k", value="v")
    kept = corrupt_copies(env)
    assert len(kept) == 1
    assert kept[0].read_bytes() == content  # byte for byte, nothing lost
    assert "is corrupt" in error and str(kept[0]) in error and "rename it back" in error
    assert not env.memory_file.exists()  # the write that found it did not go ahead


def test_quarantine_refuses_reads_writes_and_injection_until_a_person_acts(env: Env) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(b"{oops")
    worker = env.spawn()
    first = tool_error(worker, env, "memory_get", key="k")
    (kept,) = corrupt_copies(env)
    assert str(kept) in first
    for name, arguments in (
        ("memory_set", {"key": "k", "value": "v"}),
        ("memory_list", {}),
        ("memory_delete", {"key": "k"}),
    ):
        error = tool_error(worker, env, name, **arguments)
        assert "memory is unavailable" in error and str(kept) in error
    turn = frame(worker, env, "before_turn", {"messages": []})
    assert "memory is unavailable" in turn["error"]
    assert not env.memory_file.exists()
    assert corrupt_copies(env) == [kept] and kept.read_bytes() == b"{oops"


def test_repaired_file_renamed_back_is_used(env: Env) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(b'{"version": 1, "entries": {"a": "b"},')
    worker = env.spawn()
    tool_error(worker, env, "memory_get", key="a")
    (kept,) = corrupt_copies(env)
    kept.write_bytes(b'{"version": 1, "entries": {"a": "b"}}')
    kept.rename(env.memory_file)
    assert tool(worker, env, "memory_get", key="a") == "b"


def test_deleting_the_corrupt_copy_starts_empty(env: Env) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(b"garbage")
    worker = env.spawn()
    tool_error(worker, env, "memory_list")
    (kept,) = corrupt_copies(env)
    kept.rename(env.state_dir / "old-memory.bak")
    assert tool(worker, env, "memory_set", key="k", value="v").startswith("created")


def test_second_corruption_never_replaces_the_first_copy(env: Env) -> None:
    env.state_dir.mkdir(parents=True)
    worker = env.spawn()
    env.memory_file.write_bytes(b"first")
    tool_error(worker, env, "memory_list")
    env.memory_file.write_bytes(b"second")  # a person restored a still-broken file
    tool_error(worker, env, "memory_list")
    assert sorted(path.read_bytes() for path in corrupt_copies(env)) == [b"first", b"second"]


def test_newer_format_is_left_in_place(env: Env) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(b'{"version": 2, "entries": {}}')
    worker = env.spawn()
    error = tool_error(worker, env, "memory_set", key="k", value="v")
    assert "newer than this worker" in error and "upgrade i-worker-memory" in error
    assert env.memory_file.read_bytes() == b'{"version": 2, "entries": {}}'
    assert corrupt_copies(env) == []


def test_unknown_top_level_fields_survive_a_write(env: Env, worker: WorkerProcess) -> None:
    env.state_dir.mkdir(parents=True)
    env.memory_file.write_bytes(b'{"version": 1, "entries": {}, "note": "kept by a person"}')
    tool(worker, env, "memory_set", key="k", value="v")
    assert orjson.loads(env.memory_file.read_bytes())["note"] == "kept by a person"


# -- lone surrogates ------------------------------------------------------------------------

SURROGATE_FRAMES = [
    pytest.param('"key": "k", "value": "bad \\udcff decode"', id="value-escape"),
    pytest.param('"key": "k\\ud800", "value": "v"', id="key-escape"),
]


@pytest.mark.parametrize("arguments", SURROGATE_FRAMES)
def test_lone_surrogates_on_the_wire_are_refused_and_nothing_is_stored(
    env: Env, worker: WorkerProcess, arguments: str
) -> None:
    request = (
        '{"id": 7, "event": "tool", "workspace_id": "'
        + env.context()["workspace_id"]
        + '", "paths": '
        + orjson.dumps(env.paths).decode()
        + ', "data": {"name": "memory_set", "arguments": {'
        + arguments
        + "}}}\n"
    )
    response = orjson.loads(worker.call_frame(request.encode()))
    assert response["id"] == 7
    assert "surrogate" in response["error"]
    assert not env.memory_file.exists()
    assert tool(worker, env, "memory_set", key="k", value="still serving").startswith("created")


def test_raw_invalid_utf8_on_the_wire_is_refused(env: Env, worker: WorkerProcess) -> None:
    request = (
        b'{"id": 8, "event": "tool", "workspace_id": "'
        + env.context()["workspace_id"].encode()
        + b'", "paths": '
        + orjson.dumps(env.paths)
        + b', "data": {"name": "memory_set", "arguments": {"key": "k", "value": "\xed\xb3\xbf"}}}\n'
    )
    response = orjson.loads(worker.call_frame(request))
    assert response["id"] == 8 and "error" in response
    assert not env.memory_file.exists()


@given(
    before=st.text(max_size=20),
    surrogate=st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF),
    after=st.text(max_size=20),
)
def test_lone_surrogates_in_process_are_refused_with_their_position(
    tmp_path_factory: pytest.TempPathFactory, before: str, surrogate: str, after: str
) -> None:
    from i_memory.tools import memory_set

    store = MemoryStore(tmp_path_factory.getbasetemp() / "surrogates", Limits())
    for arguments, what, index in (
        ({"key": "k", "value": before + surrogate + after}, "value", len(before)),
        ({"key": "k" + surrogate, "value": "v"}, "key", 1),
    ):
        with pytest.raises(MemoryStoreError) as raised:
            memory_set(arguments, store)
        assert f"the {what} contains a lone surrogate U+{ord(surrogate):04X} at character {index}" in str(raised.value)
    assert not store.path.exists()
