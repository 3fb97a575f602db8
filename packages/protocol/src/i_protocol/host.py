"""The host side: start a worker process and call it, one frame out and one back, under a deadline.

The core's worker pool is built on this; third-party hosts can use it directly. Shutdown follows
close stdin -> wait -> SIGTERM the process group -> wait -> SIGKILL.

Two things a pipe alone cannot tell the host are watched as well:

- **a worker that dies mid-call** while a helper it started still holds its stdout (so EOF never
  comes): the read loop also watches the child's exit (a pidfd on Linux >= 5.3, else a poll every
  0.1 s) and fails the call at once;
- **a host that dies** (SIGKILL, OOM) while a worker is busy or ignores end of input: every worker's
  process group is registered with one small reaper process per host (``/bin/sh``, its own session),
  which SIGKILLs the groups still registered when the host's end of its pipe closes.
"""

from __future__ import annotations

import os
import select
import selectors
import signal
import subprocess
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import CallError, CallTimeout, ErrorFrame, FrameError
from .framing import MAX_FRAME_BYTES, decode_frame, encode_frame, is_unsigned_id
from .jsonsafe import dumps_safe, restore_surrogates, without_surrogates

ProgressCallback = Callable[[dict[str, Any]], None]
"""Receives each progress frame's ``{"message"?, "progress"?, "total"?}`` (checked) during a call."""

DEFAULT_DEADLINE_S = 15.0
"""Seconds one call may take (SPEC §3.2): serialisation, the write and the wait for the answer."""
PROGRESS_CEILING_S = 600.0
"""However often a worker reports progress, a call ends this many seconds after it began (SPEC §3.4)."""
MAX_PROGRESS_MESSAGE_CHARS = 1000
"""A progress frame's ``message`` is cut to this many characters before the host's callback sees it."""
DEFAULT_STDERR_LIMIT = 1024 * 1024
"""Bytes of a worker's stderr kept (the most recent ones); the core's ``io_limit_bytes`` default."""
_READ_CHUNK = 1 << 20


_EXIT_POLL_S = 0.1  # without a pidfd: how often a waiting call checks that the worker still lives
_PIPE_BYTES = 1 << 20
_F_SETPIPE_SZ = 1031  # Linux fcntl: set a pipe's capacity


def _widen_pipe(fd: int) -> None:
    # A 64 KiB pipe splits a 70 KiB history into several wake-ups on each side; 1 MiB does not.
    # Linux only, best effort: the limit (/proc/sys/fs/pipe-max-size) may refuse it.
    try:
        import fcntl

        fcntl.fcntl(fd, _F_SETPIPE_SZ, _PIPE_BYTES)
    except (ImportError, OSError, AttributeError):
        pass


def _pidfd(pid: int) -> int | None:
    """A pidfd of ``pid`` (readable once it exits), or None where there is none (not Linux >= 5.3)."""
    opener = getattr(os, "pidfd_open", None)
    if opener is None:
        return None
    try:
        return int(opener(pid))
    except OSError:
        return None


# The reaper reads "+PGID" / "-PGID" lines; at end of input (the host exited or was killed) it
# SIGKILLs every group still registered. POSIX sh, so it costs ~1 ms to start and nothing to run.
_REAPER_SCRIPT = """
trap '' INT HUP PIPE
groups=' '
while IFS= read -r line; do
  case $line in
    +[0-9]*) groups="$groups${line#+} " ;;
    -[0-9]*) p=${line#-}
      case $groups in *" $p "*) groups="${groups%% $p *} ${groups#* $p }" ;; esac ;;
  esac
done
for p in $groups; do kill -s KILL -- "-$p" 2>/dev/null; done
"""


class _Reaper:
    """One ``sh`` per host process that kills the registered worker groups when the host dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()
        self._owner = 0

    def register(self, pgid: int) -> None:
        with self._lock:
            self._groups.add(pgid)
            self._send(f"+{pgid}\n")

    def forget(self, pgid: int) -> None:
        with self._lock:
            if pgid in self._groups:
                self._groups.discard(pgid)
                self._send(f"-{pgid}\n", start=False)

    def _send(self, line: str, *, start: bool = True) -> None:
        for _ in range(2):
            process = self._process
            if process is None or self._owner != os.getpid() or process.poll() is not None:
                if not start:
                    return
                process = self._start()
                if process is None:
                    return
                line = "".join(f"+{pgid}\n" for pgid in sorted(self._groups))  # a new reaper learns them all
            try:
                assert process.stdin is not None
                process.stdin.write(line.encode("ascii"))
                process.stdin.flush()
                return
            except (BrokenPipeError, OSError, ValueError):
                self._process = None  # it died: start another one and tell it everything

    def _start(self) -> subprocess.Popen[bytes] | None:
        if os.name != "posix" or not os.path.exists("/bin/sh"):
            return None  # elsewhere workers rely on end of input alone
        try:
            process = subprocess.Popen(
                ["/bin/sh", "-c", _REAPER_SCRIPT],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env={"PATH": os.defpath},
                start_new_session=True,
                close_fds=True,
                cwd="/",
            )
        except OSError:
            return None
        self._process = process
        self._owner = os.getpid()
        return process


_REAPER = _Reaper()


class StderrDrain:
    """Reads a child's stderr on a thread so it never blocks, keeping at most ``limit`` bytes."""

    def __init__(self, stream: Any, limit: int) -> None:
        self._stream = stream
        self._limit = max(0, limit)
        self._chunks: deque[bytes] = deque()
        self._kept = 0
        self.total = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name="i-stderr-drain", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        fd = self._stream.fileno()
        try:
            while True:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return
                self._keep(chunk)
        except OSError:
            return

    def _keep(self, chunk: bytes) -> None:
        with self._lock:
            self.total += len(chunk)
            self._chunks.append(chunk)
            self._kept += len(chunk)
            # Keep the most recent bytes: the end of stderr is what explains a failure.
            while self._kept > self._limit and self._chunks:
                overflow = self._kept - self._limit
                head = self._chunks[0]
                if len(head) <= overflow:
                    self._chunks.popleft()
                    self._kept -= len(head)
                else:
                    self._chunks[0] = head[overflow:]
                    self._kept -= overflow

    def text(self) -> str:
        """The kept tail of stderr, decoded leniently."""
        with self._lock:
            data = b"".join(self._chunks)
        return data.decode("utf-8", "replace")

    def tail(self, max_chars: int = 2000) -> str:
        """The last ``max_chars`` characters of stderr, stripped, for error messages."""
        text = self.text().strip()
        return text[-max_chars:]

    def join(self, timeout: float) -> None:
        """Wait for the drain thread to see EOF."""
        self._thread.join(timeout)


def _frame_for_worker(message: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
    """The request frame a worker gets, and the originals of what was replaced in it.

    The event's ``data`` holds no lone surrogate (each becomes U+FFFD: most JSON libraries refuse
    them, so one undecodable byte in a tool result would fail every later call); the request's
    context (``workspace``) keeps them as JSON escapes, because it is a path the worker must open.
    The fast path is one orjson call; only a message that holds a lone surrogate is walked.
    """
    originals: dict[str, str] = {}
    try:
        try:
            frame = encode_frame(message, strict=True)
        except UnicodeEncodeError:
            data, originals = without_surrogates(message["data"])
            frame = encode_frame({**message, "data": data})
    except FrameError as exc:
        raise CallError(f"could not be sent the request: {exc}") from exc
    return frame, originals


def parse_response(line: bytes, request_id: int) -> dict[str, Any]:
    """The ``data`` of the response ``line`` to request ``request_id``, or the CallError it is.

    An error frame is an ``ErrorFrame``; a line that is no frame, another id, or data that is not
    an object is a ``CallError``. For hosts that run a worker in their own process, and the tests.
    """
    return _response_data(_frame_of(line, request_id), request_id)


def _frame_of(line: bytes, request_id: int) -> dict[str, Any]:
    try:
        frame = decode_frame(line)
    except FrameError as exc:
        raise CallError(f"sent an unreadable response: {exc}") from exc
    got = frame.get("id")
    if not is_unsigned_id(got) or got != request_id:
        raise CallError(f"answered id {got!r} to request id {request_id}")
    return frame


def _response_data(frame: dict[str, Any], request_id: int) -> dict[str, Any]:
    if "error" in frame:
        error = frame["error"]
        text = error if isinstance(error, str) else dumps_safe(error).decode()
        kind = frame.get("kind")
        raise ErrorFrame(f"answered with an error: {text}", kind=kind if isinstance(kind, str) else None, message=text)
    data = frame.get("data")
    if not isinstance(data, dict):
        raise CallError(f"answered with {type(data).__name__} data, expected an object")
    return data


def progress_of(frame: dict[str, Any]) -> dict[str, Any] | None:
    """The checked ``progress`` of a progress frame (None: the frame is the answer), or a CallError.

    A progress frame is ``{"id", "progress": {"message"?: str, "progress"?: number, "total"?: number}}``
    with neither ``data`` nor ``error``; the message is cut to ``MAX_PROGRESS_MESSAGE_CHARS``.
    """
    if "progress" not in frame or "data" in frame or "error" in frame:
        return None
    body = frame["progress"]
    if not isinstance(body, dict):
        raise CallError("sent a progress frame whose progress is not an object")
    update: dict[str, Any] = {}
    message = body.get("message")
    if message is not None:
        if not isinstance(message, str):
            raise CallError("sent a progress frame whose message is not a string")
        update["message"] = message[:MAX_PROGRESS_MESSAGE_CHARS]
    for key in ("progress", "total"):
        value = body.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise CallError(f"sent a progress frame whose {key} is not a number")
        update[key] = value
    return update


class WorkerProcess:
    """One running worker: sequential calls over its stdin/stdout, stderr drained and bounded."""

    def __init__(
        self, process: subprocess.Popen[bytes], *, name: str, stderr_limit: int, die_with_host: bool = False
    ) -> None:
        self.process = process
        self.name = name
        self._timeout = DEFAULT_DEADLINE_S
        assert process.stdin is not None and process.stdout is not None and process.stderr is not None
        self._in_fd = process.stdin.fileno()
        self._out_fd = process.stdout.fileno()
        _widen_pipe(self._in_fd)
        _widen_pipe(self._out_fd)
        os.set_blocking(self._in_fd, False)
        os.set_blocking(self._out_fd, False)
        # Registered once: a call then costs write + epoll_wait + read, no per-call epoll_ctl.
        self._readable = selectors.DefaultSelector()
        self._readable.register(self._out_fd, selectors.EVENT_READ)
        self._writable = selectors.DefaultSelector()
        self._writable.register(self._in_fd, selectors.EVENT_WRITE)
        # The child's exit wakes both waits too: its stdout may be held open by a process it started.
        self._exit_fd = _pidfd(process.pid)
        if self._exit_fd is not None:
            self._readable.register(self._exit_fd, selectors.EVENT_READ)
            self._writable.register(self._exit_fd, selectors.EVENT_READ)
        self._registered = die_with_host
        if die_with_host:
            _REAPER.register(process.pid)
            # Garbage collected without close(): forget the group, whose id may be reused once reaped.
            weakref.finalize(self, _REAPER.forget, process.pid).atexit = False
        self._buffer = bytearray()
        self._next_id = 1
        self._lock = threading.Lock()
        self.broken = False
        self.stderr = StderrDrain(process.stderr, stderr_limit)

    @classmethod
    def spawn(
        cls,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        stderr_limit: int = DEFAULT_STDERR_LIMIT,
        name: str | None = None,
        die_with_host: bool = True,
    ) -> WorkerProcess:
        """Start ``argv`` in its own session (process group) with the given environment.

        ``die_with_host``: register the group with this host's reaper, so that the worker and
        everything in its group is killed when the host dies without closing it (SIGKILL, OOM).
        """
        try:
            process = subprocess.Popen(
                list(argv),
                cwd=cwd,
                env=dict(env) if env is not None else None,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            problem = f"could not be started: {exc.strerror or exc} ({list(argv)!r})"
            raise CallError(problem, worker=name or os.path.basename(argv[0])) from exc
        return cls(
            process, name=name or os.path.basename(argv[0]), stderr_limit=stderr_limit, die_with_host=die_with_host
        )

    @property
    def pid(self) -> int:
        """The worker's process id (also its process group id)."""
        return self.process.pid

    @property
    def alive(self) -> bool:
        """True while the process runs and no call has broken it: it may be called again."""
        return not self.broken and self.process.poll() is None

    def call(
        self,
        event: str,
        data: dict[str, Any],
        *,
        context: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_DEADLINE_S,
        progress: ProgressCallback | None = None,
        ceiling: float = PROGRESS_CEILING_S,
    ) -> dict[str, Any]:
        """Send one request and return its ``data``; any failure marks this worker broken.

        The deadline covers serialisation, the write and the wait for the answer. Every
        ``CallError`` names this worker and, unless the worker answered with an error frame, ends
        with the tail of its stderr (what usually explains a crash or a protocol violation).

        ``progress`` opts in to progress frames (SPEC §3.4, extension ``progress``): the request
        carries ``"progress": true``, each progress frame goes to the callback and restarts the
        deadline, and the call still ends ``ceiling`` seconds after it began.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            try:
                if self.broken:
                    raise CallError("is broken and cannot be called again")
                self._timeout = timeout
                request_id = self._next_id
                self._next_id += 1
                message: dict[str, Any] = {"id": request_id, "event": event}
                if context:
                    message.update(context)
                if progress is not None:
                    message["progress"] = True
                message["data"] = data
                frame, originals = _frame_for_worker(message)
                self._write(frame, deadline)
                if progress is None:
                    answer = parse_response(self._read_line(deadline), request_id)
                else:
                    answer = self._answer_after_progress(request_id, deadline, timeout, progress, ceiling)
                return restore_surrogates(answer, originals) if originals else answer
            except CallError as exc:
                self._failed(exc)
                raise

    def _answer_after_progress(
        self, request_id: int, deadline: float, timeout: float, report: ProgressCallback, ceiling: float
    ) -> dict[str, Any]:
        """The answer's data, reading the progress frames before it: each restarts the deadline."""
        end = deadline - timeout + ceiling
        deadline = min(deadline, end)
        while True:
            try:
                line = self._read_line(deadline)
            except CallTimeout:
                if time.monotonic() >= end:
                    raise CallTimeout(
                        f"did not answer within the ceiling of {ceiling:g} s (progress frames keep a call "
                        "alive up to it)"
                    ) from None
                raise CallTimeout(f"did not answer or report progress within {timeout:g} s") from None
            frame = _frame_of(line, request_id)
            update = progress_of(frame)
            if update is None:
                return _response_data(frame, request_id)
            report(update)
            deadline = min(time.monotonic() + timeout, end)

    def call_frame(self, frame: bytes, *, timeout: float = DEFAULT_DEADLINE_S) -> bytes:
        """Send a pre-encoded frame and return the raw response line (for benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._timeout = timeout
            try:
                self._write(frame, deadline)
                return self._read_line(deadline)
            except CallError as exc:
                self._failed(exc)
                raise

    def _failed(self, exc: CallError) -> None:
        """Mark this worker broken and complete ``exc`` (raised by this call) with its name and stderr."""
        self.broken = True
        exc.worker = self.name
        if not isinstance(exc, ErrorFrame):
            tail = self.stderr.tail(500)
            if tail and tail not in exc.problem:
                exc.problem += f"; stderr: {tail}"

    def _remaining(self, deadline: float, what: str) -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CallTimeout(f"did not {what} within the deadline of {self._timeout:g} s")
        return remaining

    def _wait(self, deadline: float, what: str) -> float:
        # Without a pidfd the wait is cut into short slices, so an exit is seen within _EXIT_POLL_S.
        remaining = self._remaining(deadline, what)
        return remaining if self._exit_fd is not None else min(remaining, _EXIT_POLL_S)

    def _died(self) -> None:
        """The worker exited while a call was under way (its pipes may still be held by its children)."""
        code: int | None
        try:
            code = self.process.wait(1.0)
        except subprocess.TimeoutExpired:  # the pidfd said so; the status is late, not absent
            code = self.process.poll()
        if code is not None and code < 0:
            try:
                how = f"was killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        raise CallError(f"{how} during the call")

    def _write(self, frame: bytes, deadline: float) -> None:
        view = memoryview(frame)
        while view:
            try:
                written = os.write(self._in_fd, view)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, OSError) as exc:
                raise CallError(f"closed its input ({self._exit_note(exc)})") from exc
            view = view[written:]
            if view:
                for key, _ in self._writable.select(self._wait(deadline, "accept the request")):
                    if key.fd == self._exit_fd:
                        self._died()
                if self._exit_fd is None and self.process.poll() is not None:
                    self._died()

    def _read_line(self, deadline: float) -> bytes:
        buffer = self._buffer
        scan_from = 0
        while True:
            newline = buffer.find(b"\n", scan_from)
            if newline >= 0:
                line = bytes(buffer[: newline + 1])
                del buffer[: newline + 1]
                return line
            if len(buffer) >= MAX_FRAME_BYTES:
                raise CallError(f"sent a response frame over the {MAX_FRAME_BYTES}-byte limit")
            scan_from = len(buffer)
            # Wait first: right after a write the answer is almost never there yet.
            readable = exited = False
            for key, _ in self._readable.select(self._wait(deadline, "answer")):
                if key.fd == self._out_fd:
                    readable = True
                else:
                    exited = True
            if self._exit_fd is None and not readable:
                exited = self.process.poll() is not None
            if readable or exited:
                try:
                    chunk = os.read(self._out_fd, _READ_CHUNK)
                except BlockingIOError:
                    chunk = None
                if chunk:
                    buffer += chunk
                    continue  # an answer written just before the exit is still an answer
                if chunk is not None:
                    what = "mid-frame" if buffer else "before answering"
                    raise CallError(f"closed its output {what} ({self._exit_note()})")
                if exited:
                    self._died()

    def _exit_note(self, exc: BaseException | None = None) -> str:
        code = self.process.poll()
        if code is None:
            try:
                code = self.process.wait(0.2)
            except subprocess.TimeoutExpired:
                return str(exc) if exc else "still running"
        return f"exit status {code}"

    def close(self, grace: float = 2.0) -> None:
        """Shut down: close stdin, wait, SIGTERM the group, wait, SIGKILL the group."""
        self.broken = True
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass
        if self._exit_fd is not None:
            # The pidfd says at once when the worker is gone; Popen.wait's timed wait polls with a
            # growing back-off (up to 50 ms late), which a one-shot run pays at every exit.
            select.select([self._exit_fd], [], [], grace)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self._signal_group(signal.SIGTERM)
            try:
                self.process.wait(grace)
            except subprocess.TimeoutExpired:
                self._signal_group(signal.SIGKILL)
                self.process.wait()
        # Children the worker left behind in its group go too.
        self._signal_group(signal.SIGKILL)
        self._release()

    def kill(self) -> None:
        """Kill the worker's whole process group at once (timeouts and failures)."""
        self.broken = True
        self._signal_group(signal.SIGKILL)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self._release()

    def _signal_group(self, sig: signal.Signals) -> None:
        try:
            os.killpg(self.process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def _release(self) -> None:
        for stream in (self.process.stdin, self.process.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        self.stderr.join(1.0)
        try:
            if self.process.stderr is not None:
                self.process.stderr.close()
        except OSError:
            pass
        self._readable.close()
        self._writable.close()
        if self._exit_fd is not None:
            try:
                os.close(self._exit_fd)
            except OSError:
                pass
            self._exit_fd = None
        if self._registered:
            # The group is dead (SIGKILLed just before): the reaper must never signal its id again.
            self._registered = False
            _REAPER.forget(self.process.pid)
