"""Files that several processes share: bounded reads, locked updates, corrupt files set aside.

Public API, versioned with the protocol: the core and every worker use these instead of their own
copies, so a file is read, locked and replaced the same way everywhere.

- **Bounded reads** (``read_bytes``, ``read_text``, ``read_json``): at most ``limit`` bytes (or
  characters) are read, one more to see that a file is over; an over-limit file is a
  ``FileTooLarge``, never a file read in part. Every read opens the file non-blocking
  (``open_regular``) and refuses anything but a regular file with an ``OSError`` ("not a regular
  file (a FIFO)"): a FIFO, a device or a socket put where a configuration, session or store file
  belongs would otherwise hang the reader or feed it without end. ``FileNotFoundError`` and other ``OSError`` pass
  through unchanged, because what a missing file means (none yet, or an error) is the caller's
  to say. Invalid UTF-8 or JSON is a ``FileDecodeError`` naming the file and the position.
- **Locked updates** (``locked_update``): ``<path>.lock`` is held (``flock`` on it; see ``acquire_lock``)
  while the caller re-reads the file and replaces it atomically
  (``i_protocol.atomic``); a lock not acquired in time is a ``LockTimeout`` naming the file and
  the seconds. ``acquire_lock`` is the same lock for a caller that holds it longer (a session).
  Lock files stay after use, unless the holder asks (``remove_on_release``): it then unlinks its
  own lock file just before it lets go. That is safe only because every waiter here checks, once it
  has the ``flock``, that the file it locked is still the one at the path (else it locks the new
  one); filelock does not check, so the fallback never unlinks.
- **Stamps** (``file_stamp``): a file's path, size, modification time and inode, or ``None``
  values when it does not exist: what a ``tools_list`` answer's ``depends_on`` lists, so that the
  core can keep the answer until one of those files changes.
- **Set aside** (``set_aside``): a file that cannot be read as what it must be is renamed to
  ``<name>.corrupt-<UTC timestamp>[-n]`` beside it, never over an earlier copy, so nothing is lost
  and the next writer starts afresh.

Every error is an ``i_protocol.errors.FileError``; a package maps it to its own error type where
its messages or exit codes require.

The lock is ``flock(2)`` on ``<path>.lock``, taken here directly where ``fcntl`` exists: it is the
very lock filelock's ``UnixFileLock`` takes (an exclusive ``flock`` on the same file), so a process
using filelock and one using this module exclude each other, but importing filelock 4.x costs
20-40 ms (``logging``, ``secrets``, ``decimal``, its own back-ends), paid on the critical path of a
one-shot run by the core's session lock and by the cache worker's first ``before_request``.
Where ``fcntl`` is missing (Windows), or a file system refuses ``flock`` (``ENOSYS``,
``EOPNOTSUPP``), filelock's ``FileLock`` is used, which handles those cases.
"""

from __future__ import annotations

import errno
import io
import os
import stat
import time
from typing import Any, BinaryIO, Protocol

import orjson

from .atomic import atomic_write_bytes
from .errors import FileDecodeError, FileTooLarge, LockTimeout
from .jsonsafe import loads_safe

__all__ = [
    "CORRUPT_INFIX",
    "LOCK_SUFFIX",
    "HeldLock",
    "LockedFile",
    "acquire_lock",
    "file_stamp",
    "locked_update",
    "open_regular",
    "parse_json",
    "read_bytes",
    "read_json",
    "read_text",
    "set_aside",
]

StrPath = str | os.PathLike[str]
LOCK_SUFFIX = ".lock"
CORRUPT_INFIX = ".corrupt-"
LOCK_POLL_S = 0.05  # how often a busy lock is tried again (filelock's default)
_BUSY = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})  # some file systems say EACCES
_NO_FLOCK = frozenset({errno.ENOSYS, errno.EOPNOTSUPP})


_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISDIR, "a folder"),
)


def open_regular(path: StrPath) -> BinaryIO:
    """``path`` opened for reading in binary, refused unless it is a regular file.

    The open is non-blocking (``O_NONBLOCK``), so a FIFO with no writer cannot hang it, then
    ``fstat`` decides: anything but a regular file is an ``OSError`` (``errno.EINVAL``, the path as
    its filename, "not a regular file (a FIFO)" as its strerror). A regular file ignores
    ``O_NONBLOCK``, so the handle reads as one opened with ``open(path, "rb")``.
    """
    target = os.fspath(path)
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "a special file")
            raise OSError(errno.EINVAL, f"not a regular file ({kind})", target)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bytes(path: StrPath, limit: int, *, what: str = "file") -> bytes:
    """The bytes of ``path``, at most ``limit``; ``FileTooLarge`` (naming ``what``) when it holds more.

    Only a regular file is read (``open_regular``): a FIFO or a device is an ``OSError``.
    """
    with open_regular(path) as handle:
        raw = handle.read(limit + 1)
    if len(raw) > limit:
        raise FileTooLarge(os.fspath(path), f"{what} is larger than {limit} bytes")
    return raw


def read_text(path: StrPath, limit: int, *, what: str = "file") -> str:
    """The UTF-8 text of ``path``, at most ``limit`` characters, newlines read as ``open()`` reads them."""
    try:
        with io.TextIOWrapper(open_regular(path), encoding="utf-8") as handle:
            text = handle.read(limit + 1)
    except UnicodeDecodeError as exc:
        raise FileDecodeError(os.fspath(path), f"{what} is not valid UTF-8 ({exc.reason})", exc.reason) from None
    if len(text) > limit:
        raise FileTooLarge(os.fspath(path), f"{what} is longer than {limit} characters")
    return text


def read_json(path: StrPath, limit: int, *, what: str = "file", lossless: bool = False) -> Any:
    """The JSON document in ``path`` (at most ``limit`` bytes); see ``parse_json`` for ``lossless``."""
    return parse_json(read_bytes(path, limit, what=what), path, what=what, lossless=lossless)


def parse_json(raw: bytes, path: StrPath, *, what: str = "file", lossless: bool = False) -> Any:
    """Decode JSON read from ``path`` with orjson; ``FileDecodeError`` names the file, line and column.

    ``lossless`` also accepts escaped lone surrogates (``i_protocol.jsonsafe``), for files that may
    hold undecodable names; without it the strict orjson rules apply.
    """
    try:
        return loads_safe(raw) if lossless else orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        reason = f"{exc.msg} at line {exc.lineno}, column {exc.colno}"
        raise FileDecodeError(os.fspath(path), f"{what} is not valid JSON: {reason}", reason) from None


class HeldLock(Protocol):
    """An acquired lock: ``release()`` lets it go (a second call does nothing)."""

    def release(self) -> None: ...


def acquire_lock(path: StrPath, *, timeout: float, remove_on_release: bool = False) -> HeldLock:
    """Acquire ``<path>.lock`` (creating its folder) within ``timeout`` seconds; the caller releases it.

    ``timeout=0`` tries once. ``LockTimeout`` names the file and the seconds; an ``OSError`` (a
    folder that cannot be created or written) passes through. ``remove_on_release``: the holder
    unlinks the lock file just before releasing it, where ``flock`` is used (never on the filelock
    fallback), so nothing is left behind.
    """
    target = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(target)), exist_ok=True)
    try:
        import fcntl
    except ImportError:  # not POSIX
        return _file_lock(target, timeout)
    deadline = time.monotonic() + timeout
    lock_path = target + LOCK_SUFFIX
    while True:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by children (PEP 446)
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as exc:
                    if exc.errno in _NO_FLOCK:
                        os.close(fd)
                        return _file_lock(target, timeout)
                    if exc.errno not in _BUSY:
                        raise
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _timed_out(target, timeout)
                time.sleep(min(LOCK_POLL_S, left))
            if _same_file(fd, lock_path):
                return _Flock(fd, lock_path if remove_on_release else None)
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # the lock file was removed or replaced while we waited: lock the one there now


def _same_file(fd: int, path: str) -> bool:
    """True when ``fd`` is still the file at ``path`` (locking an unlinked inode excludes no one)."""
    held = os.fstat(fd)
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (now.st_dev, now.st_ino)


class _Flock:
    """An acquired ``flock`` on an open lock file; closing the descriptor would release it too."""

    __slots__ = ("_fd", "_remove")

    def __init__(self, fd: int, remove: str | None = None) -> None:
        self._fd = fd
        self._remove = remove

    def release(self) -> None:
        fd, self._fd = self._fd, -1
        if fd < 0:
            return
        if self._remove is not None and _same_file(fd, self._remove):
            # Still held: a waiter that opened this inode finds it gone once it gets the flock.
            try:
                os.unlink(self._remove)
            except OSError:
                pass  # left behind, as without remove_on_release
        os.close(fd)  # closing the only descriptor of the open file releases its flock

    def __del__(self) -> None:
        self.release()


def _file_lock(target: str, timeout: float) -> HeldLock:
    """filelock's ``FileLock`` on ``<target>.lock``, where this module cannot ``flock`` itself."""
    from filelock import FileLock, Timeout

    lock = FileLock(target + LOCK_SUFFIX, timeout=timeout)
    try:
        lock.acquire()
    except Timeout:
        raise _timed_out(target, timeout) from None
    return lock


def _timed_out(target: str, timeout: float) -> LockTimeout:
    return LockTimeout(target, f"timed out after {timeout:g}s waiting for its lock; another process holds it")


class LockedFile:
    """A file held under its lock for one read-modify-write: re-read it, then ``replace`` it."""

    __slots__ = ("_durable", "_lock", "_mode", "_timeout", "path")

    def __init__(self, path: StrPath, *, timeout: float, durable: bool, mode: int) -> None:
        self.path = os.fspath(path)
        self._timeout = timeout
        self._durable = durable
        self._mode = mode
        self._lock: HeldLock | None = None

    def replace(self, data: bytes) -> None:
        """Replace the file with ``data`` atomically (readers see the old or the new content)."""
        atomic_write_bytes(self.path, data, self._mode, durable=self._durable)

    def __enter__(self) -> LockedFile:
        self._lock = acquire_lock(self.path, timeout=self._timeout)
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def locked_update(path: StrPath, *, timeout: float, durable: bool = True, mode: int = 0o600) -> LockedFile:
    """``with locked_update(path, timeout=10) as file:`` hold the lock, re-read, ``file.replace(new)``.

    Read inside the block: what was read before the lock may be stale. Leaving the block without
    ``replace`` writes nothing. ``durable=False`` skips the fsyncs (see ``atomic_write_bytes``).
    """
    return LockedFile(path, timeout=timeout, durable=durable, mode=mode)


def file_stamp(path: StrPath) -> dict[str, Any]:
    """``{"path", "size", "mtime_ns", "ino"}`` of ``path`` now (absolute), each ``None`` when it does
    not exist or cannot be seen. Take it *before* reading the file: a change after it then shows.
    Two stamps are equal exactly when the file looks unchanged (an atomic replace changes the inode)."""
    target = os.path.abspath(os.fspath(path))
    try:
        st = os.stat(target)
    except OSError:
        return {"path": target, "size": None, "mtime_ns": None, "ino": None}
    return {"path": target, "size": st.st_size, "mtime_ns": st.st_mtime_ns, "ino": st.st_ino}


def set_aside(path: StrPath) -> str:
    """Rename ``path`` to ``<name>.corrupt-<UTC timestamp>[-n]`` beside it; returns the new path.

    An earlier copy is never replaced: a name already taken gets ``-1``, ``-2``, … Call it under the
    file's lock, so that no other writer sets the same file aside at the same time.
    """
    source = os.fspath(path)
    seconds, nanoseconds = divmod(time.time_ns(), 1_000_000_000)
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(seconds)) + f".{nanoseconds // 1000:06d}Z"
    base = f"{source}{CORRUPT_INFIX}{stamp}"
    target, counter = base, 0
    while os.path.lexists(target):
        counter += 1
        target = f"{base}-{counter}"
    os.rename(source, target)
    return target
