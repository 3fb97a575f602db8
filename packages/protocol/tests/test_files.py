"""i_protocol.files: bounded reads, locked updates across real processes, corrupt files set aside."""

from __future__ import annotations

import calendar
import os
import pickle
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from i_protocol import files
from i_protocol.errors import FileDecodeError, FileError, FileTooLarge, LockTimeout
from i_protocol.files import acquire_lock, locked_update, read_bytes, read_json, read_text, set_aside
from i_protocol.testing import scaled, wait_until

# -- bounded reads -------------------------------------------------------------------------------


def test_read_bytes_takes_a_file_at_the_limit_and_refuses_one_byte_more(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"x" * 10)
    assert read_bytes(path, 10) == b"x" * 10
    with pytest.raises(FileTooLarge) as caught:
        read_bytes(path, 9, what="the queue")
    assert str(caught.value) == f"{path}: the queue is larger than 9 bytes"
    assert caught.value.path == str(path)


def test_a_missing_file_is_the_callers_to_judge(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_bytes(tmp_path / "absent.json", 100)
    with pytest.raises(FileNotFoundError):
        read_json(tmp_path / "absent.json", 100)


def test_read_text_counts_characters_not_bytes(tmp_path: Path) -> None:
    path = tmp_path / "prompt.txt"
    path.write_text("é" * 5, encoding="utf-8")  # 5 characters, 10 bytes
    assert read_text(path, 5) == "é" * 5
    with pytest.raises(FileTooLarge, match=r"prompt\.txt: file is longer than 4 characters$"):
        read_text(path, 4)


def test_read_text_names_invalid_utf8(tmp_path: Path) -> None:
    path = tmp_path / "latin1.txt"
    path.write_bytes(b"caf\xe9")
    with pytest.raises(FileDecodeError) as caught:
        read_text(path, 100, what="system prompt")
    assert str(caught.value).startswith(f"{path}: system prompt is not valid UTF-8 (")


def test_corrupt_json_names_the_file_the_line_and_the_column(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(b'{\n  "a": tru\n}')
    with pytest.raises(FileDecodeError) as caught:
        read_json(path, 1000, what="memory file")
    message = str(caught.value)
    assert message.startswith(f"{path}: memory file is not valid JSON: ")
    assert message.endswith("at line 2, column 8")
    assert caught.value.reason in message and "line 2, column 8" in caught.value.reason


def test_json_over_the_limit_is_refused_before_it_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(orjson.dumps({"k": "v" * 100}))
    with pytest.raises(FileTooLarge, match="larger than 50 bytes"):
        read_json(path, 50)


def test_lossless_json_keeps_escaped_lone_surrogates_and_strict_json_refuses_them(tmp_path: Path) -> None:
    path = tmp_path / "registry.json"
    path.write_bytes(b'{"path": "/p/caf\\udce9"}')
    assert read_json(path, 100, lossless=True) == {"path": "/p/caf\udce9"}
    with pytest.raises(FileDecodeError, match="is not valid JSON"):
        read_json(path, 100)


def test_file_errors_survive_pickling_for_multiprocessing() -> None:
    for error in (
        FileTooLarge("/p", "big"),
        FileDecodeError("/p", "bad", "at line 1, column 1"),
        LockTimeout("/p", "x"),
    ):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
        assert isinstance(copy, FileError)


# -- locked updates ------------------------------------------------------------------------------

_INCREMENTER = textwrap.dedent(
    """
    import sys, orjson
    from i_protocol.files import locked_update, read_json

    path, rounds = sys.argv[1], int(sys.argv[2])
    print("ready", flush=True)
    sys.stdin.readline()  # start together with the other process
    for _ in range(rounds):
        with locked_update(path, timeout=30, durable=False) as file:
            try:
                count = read_json(path, 1000)["count"]
            except FileNotFoundError:
                count = 0
            file.replace(orjson.dumps({"count": count + 1}))
    """
)

_HOLDER = textwrap.dedent(
    """
    import sys
    from i_protocol.files import acquire_lock

    lock = acquire_lock(sys.argv[1], timeout=30)
    print("held", flush=True)
    sys.stdin.readline()  # hold until the test says so
    lock.release()
    """
)


def _python(code: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", code, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )


def test_two_processes_updating_one_file_lose_no_update(tmp_path: Path) -> None:
    path = tmp_path / "shared" / "counter.json"  # the folder does not exist yet: the lock creates it
    rounds = 150
    workers = [_python(_INCREMENTER, str(path), str(rounds)) for _ in range(2)]
    for worker in workers:
        assert worker.stdout is not None and worker.stdout.readline() == "ready\n"
    for worker in workers:
        assert worker.stdin is not None
        worker.stdin.write("go\n")
        worker.stdin.close()
    for worker in workers:
        assert worker.wait(timeout=scaled(120)) == 0
    assert orjson.loads(path.read_bytes()) == {"count": 2 * rounds}
    assert sorted(p.name for p in path.parent.iterdir()) == ["counter.json", "counter.json.lock"]  # no temporaries


def test_lock_timeout_names_the_file_and_the_seconds(tmp_path: Path) -> None:
    path = tmp_path / "stats.json"
    holder = _python(_HOLDER, str(path))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        started = time.monotonic()
        with pytest.raises(LockTimeout) as caught, locked_update(path, timeout=0.3):
            pytest.fail("the lock was acquired while another process held it")
        assert time.monotonic() - started >= 0.3
        assert str(caught.value) == f"{path}: timed out after 0.3s waiting for its lock; another process holds it"
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=scaled(30)) == 0
    with locked_update(path, timeout=5) as file:  # free again once the holder let go
        file.replace(b"{}")
    assert path.read_bytes() == b"{}"


def test_an_update_that_fails_writes_nothing_and_releases_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_bytes(b'{"old": true}')
    with pytest.raises(ZeroDivisionError), locked_update(path, timeout=1):
        _ = 1 / 0
    with locked_update(path, timeout=0):  # not replaced: nothing written
        pass
    assert path.read_bytes() == b'{"old": true}'
    lock = acquire_lock(path, timeout=0)  # released both times
    lock.release()


_FILELOCK_HOLDER = textwrap.dedent(
    """
    import sys
    from filelock import FileLock

    lock = FileLock(sys.argv[1] + ".lock", timeout=30)
    lock.acquire()
    print("held", flush=True)
    sys.stdin.readline()
    lock.release()
    """
)

_TRY_FILELOCK = textwrap.dedent(
    """
    import sys
    from filelock import FileLock, Timeout

    try:
        FileLock(sys.argv[1] + ".lock", timeout=0).acquire()
    except Timeout:
        print("busy")
    else:
        print("acquired")
    """
)


def _try_lock_in_another_process(path: Path, code: str = _HOLDER.replace("30", "0")) -> str:
    """``held`` when another process gets the lock at once, else the LockTimeout's message."""
    probe = """
import sys
from i_protocol.errors import LockTimeout
from i_protocol.files import acquire_lock
try:
    acquire_lock(sys.argv[1], timeout=0).release()
except LockTimeout as exc:
    print(exc)
else:
    print("held")
"""
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_lock_excludes_filelock_and_filelock_excludes_it(tmp_path: Path) -> None:
    """A worker pinned to an older i-protocol locks with filelock: both must see the same lock."""
    path = tmp_path / "stats.json"
    holder = _python(_FILELOCK_HOLDER, str(path))
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(LockTimeout):
            acquire_lock(path, timeout=0.2)
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=scaled(30)) == 0
    lock = acquire_lock(path, timeout=5)
    try:
        done = subprocess.run([sys.executable, "-c", _TRY_FILELOCK, str(path)], capture_output=True, text=True)
        assert done.stdout.strip() == "busy", done.stderr
    finally:
        lock.release()
    done = subprocess.run([sys.executable, "-c", _TRY_FILELOCK, str(path)], capture_output=True, text=True)
    assert done.stdout.strip() == "acquired", done.stderr


def test_a_child_process_does_not_inherit_the_lock(tmp_path: Path) -> None:
    path = tmp_path / "session.json"
    lock = acquire_lock(path, timeout=0)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE, close_fds=False
    )
    try:
        assert _try_lock_in_another_process(path).endswith("another process holds it")
        lock.release()
        lock.release()  # a second release does nothing
        assert _try_lock_in_another_process(path) == "held"  # the child, still running, holds nothing
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=scaled(30))


@pytest.mark.skipif(os.name != "posix", reason="flock semantics")
def test_a_lock_file_replaced_while_waiting_is_locked_where_it_now_is(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "memory.json"
    holder = _python(_HOLDER, str(path))
    got: list[files.HeldLock] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiter = threading.Thread(target=lambda: got.append(acquire_lock(path, timeout=scaled(20))))
        waiter.start()
        if os.path.isdir("/proc/self/fd"):
            assert wait_until(lambda: _opened_here(f"{path}.lock"), 10)  # the waiter polls the old lock file
        else:
            time.sleep(0.2)
        os.unlink(f"{path}.lock")  # what no i process does, but a user's cleanup might
        (tmp_path / "memory.json.lock").write_bytes(b"")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=scaled(30)) == 0
    waiter.join(timeout=scaled(30))
    assert len(got) == 1
    try:  # the waiter holds the file now at the path, so a newcomer is excluded
        assert _try_lock_in_another_process(path).endswith("another process holds it")
    finally:
        got[0].release()


_REMOVING_HOLDER = _HOLDER.replace("timeout=30)", "timeout=30, remove_on_release=True)")


def _opened_here(path: str) -> bool:
    """True once this process has ``path`` open (a waiter polling the lock file)."""
    folder = "/proc/self/fd"
    for fd in os.listdir(folder):
        try:
            if os.readlink(f"{folder}/{fd}") == path:
                return True
        except OSError:
            continue
    return False


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="flock semantics, Linux's /proc")
def test_a_holder_that_removes_its_lock_file_lets_no_second_writer_in(tmp_path: Path) -> None:
    import threading

    path = tmp_path / "s.json"
    lock_file = f"{path}.lock"
    holder = _python(_REMOVING_HOLDER, str(path))
    got: list[files.HeldLock] = []
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        waiter = threading.Thread(
            target=lambda: got.append(acquire_lock(path, timeout=scaled(20), remove_on_release=True))
        )
        waiter.start()
        assert wait_until(lambda: _opened_here(lock_file), 10)  # the waiter polls the holder's lock file
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        assert holder.wait(timeout=scaled(30)) == 0
    waiter.join(timeout=scaled(30))
    assert len(got) == 1
    try:  # the waiter locked the file now at the path (not the unlinked one): a newcomer is excluded
        assert os.path.exists(lock_file)
        assert _try_lock_in_another_process(path).endswith("another process holds it")
    finally:
        got[0].release()
    assert not os.path.exists(lock_file)  # its holder removed it; nothing is left behind
    assert _try_lock_in_another_process(path) == "held"


def test_the_filelock_fallback_never_removes_its_lock_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import fcntl

    real = fcntl.flock
    refused: list[int] = []

    def no_flock(fd: int, operation: int) -> None:
        if not refused:  # this module's own try; filelock's then works
            refused.append(fd)
            raise OSError(errno.ENOSYS, "Function not implemented")
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock)
    acquire_lock(tmp_path / "s.json", timeout=1, remove_on_release=True).release()
    assert refused and (tmp_path / "s.json.lock").exists()


def test_a_file_system_without_flock_falls_back_to_filelock(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import fcntl

    import filelock

    real = fcntl.flock
    refused: list[int] = []

    def no_flock(fd: int, operation: int) -> None:
        if not refused:
            refused.append(fd)
            raise OSError(errno.ENOSYS, "Function not implemented")
        real(fd, operation)

    monkeypatch.setattr(fcntl, "flock", no_flock)
    lock = acquire_lock(tmp_path / "state.json", timeout=1)
    assert refused and isinstance(lock, filelock.BaseFileLock)
    lock.release()
    assert _try_lock_in_another_process(tmp_path / "state.json") == "held"


def test_replace_keeps_the_requested_mode(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    with locked_update(path, timeout=1, mode=0o600) as file:
        file.replace(b"[]")
    assert path.stat().st_mode & 0o777 == 0o600 & ~_umask()


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# -- setting a corrupt file aside ----------------------------------------------------------------


def test_set_aside_names_the_copy_by_utc_time_and_keeps_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "memory.json"
    path.write_bytes(b"{oops")
    before = time.time()
    kept = Path(set_aside(path))
    assert not path.exists() and kept.read_bytes() == b"{oops"
    assert kept.parent == tmp_path and kept.name.startswith("memory.json.corrupt-")
    stamp = kept.name.removeprefix("memory.json.corrupt-")
    assert len(stamp) == len("20260101T120000.000000Z") and stamp.endswith("Z")
    seconds = calendar.timegm(time.strptime(stamp[:15], "%Y%m%dT%H%M%S"))
    assert abs(seconds - before) < 5


def test_set_aside_never_replaces_an_earlier_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(files.time, "time_ns", lambda: 1_767_225_600_123_456_789)  # 2026-01-01T00:00:00.123456Z
    path = tmp_path / "cache-stats.json"
    earlier = tmp_path / "cache-stats.json.corrupt-20260101T000000.123456Z"
    earlier.write_bytes(b"first")
    path.write_bytes(b"second")
    assert set_aside(path) == f"{earlier}-1"
    path.write_bytes(b"third")
    assert set_aside(path) == f"{earlier}-2"
    assert earlier.read_bytes() == b"first"
    assert Path(f"{earlier}-1").read_bytes() == b"second"
    assert Path(f"{earlier}-2").read_bytes() == b"third"


def test_a_stamp_changes_with_the_file_and_says_when_it_is_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from i_protocol.files import atomic_write_bytes, file_stamp

    path = tmp_path / "mcp.json"
    assert file_stamp(path) == {"path": str(path), "size": None, "mtime_ns": None, "ino": None}
    path.write_bytes(b"{}")
    first = file_stamp(path)
    assert first["size"] == 2 and first == file_stamp(path)  # equal while unchanged
    atomic_write_bytes(path, b"{}")  # same size, same content, replaced: another inode
    assert file_stamp(path) != first
    monkeypatch.chdir(tmp_path)
    assert file_stamp("mcp.json")["path"] == str(path)  # always absolute


# -- only regular files are read -------------------------------------------------------------------

_READ_FIFO = """
import sys
from i_protocol.files import read_bytes, read_json, read_text
reader = {"bytes": read_bytes, "text": read_text, "json": read_json}[sys.argv[2]]
try:
    reader(sys.argv[1], 1000)
except OSError as exc:
    print(f"refused: {exc.filename}: {exc.strerror}")
else:
    print("read")
"""


@pytest.mark.parametrize("reader", ["bytes", "text", "json"])
def test_a_fifo_with_no_writer_is_refused_at_once_not_waited_on(tmp_path: Path, reader: str) -> None:
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    # In a child with a guard: a regression hangs the child, and the guard turns that into a failure.
    done = subprocess.run(
        [sys.executable, "-c", _READ_FIFO, str(fifo), reader],
        capture_output=True,
        text=True,
        timeout=scaled(20),
    )
    assert done.stdout.strip() == f"refused: {fifo}: not a regular file (a FIFO)", done.stderr


def test_a_device_or_a_folder_is_refused_and_a_regular_file_reads_as_before(tmp_path: Path) -> None:
    with pytest.raises(OSError, match="not a regular file \\(a character device\\)"):
        read_bytes("/dev/zero", 10)
    with pytest.raises(OSError, match="not a regular file \\(a folder\\)"):
        read_text(tmp_path, 10)
    path = tmp_path / "plain.txt"
    path.write_bytes(b"a\r\nb")
    assert read_text(path, 10) == "a\nb"
    with files.open_regular(path) as handle:
        assert handle.read() == b"a\r\nb"
