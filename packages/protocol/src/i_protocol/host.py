"""The host side: start a worker process and call it, one frame out and one back, under a deadline.

The core's worker pool is built on this; third-party hosts can use it directly. Shutdown follows
close stdin -> wait -> SIGTERM the process group -> wait -> SIGKILL.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .errors import CallError, CallTimeout, ErrorFrame, FrameError
from .framing import MAX_FRAME_BYTES, encode_frame, is_unsigned_id

DEFAULT_DEADLINE_S = 15.0
DEFAULT_STDERR_LIMIT = 1024 * 1024
_READ_CHUNK = 1 << 20


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


class WorkerProcess:
    """One running worker: sequential calls over its stdin/stdout, stderr drained and bounded."""

    def __init__(self, process: subprocess.Popen[bytes], *, name: str, stderr_limit: int) -> None:
        self.process = process
        self.name = name
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
    ) -> WorkerProcess:
        """Start ``argv`` in its own session (process group) with the given environment."""
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
            raise CallError(f"cannot start worker {list(argv)!r}: {exc.strerror or exc}") from None
        return cls(process, name=name or os.path.basename(argv[0]), stderr_limit=stderr_limit)

    @property
    def pid(self) -> int:
        """The worker's process id (also its process group id)."""
        return self.process.pid

    def call(
        self,
        event: str,
        data: dict[str, Any],
        *,
        context: Mapping[str, Any] | None = None,
        timeout: float = DEFAULT_DEADLINE_S,
    ) -> dict[str, Any]:
        """Send one request and return its ``data``; any failure marks this worker broken.

        The deadline covers serialisation, the write and the wait for the answer.
        """
        deadline = time.monotonic() + timeout
        with self._lock:
            if self.broken:
                raise CallError(f"worker {self.name} is broken and cannot be called again")
            request_id = self._next_id
            self._next_id += 1
            message: dict[str, Any] = {"id": request_id, "event": event}
            if context:
                message.update(context)
            message["data"] = data
            try:
                frame = encode_frame(message)
                self._write(frame, deadline)
                line = self._read_line(deadline)
                return self._parse(line, request_id, event)
            except CallError:
                self.broken = True
                raise
            except FrameError as exc:
                self.broken = True
                raise CallError(f"worker {self.name}, event {event!r}: {exc}") from None

    def call_frame(self, frame: bytes, *, timeout: float = DEFAULT_DEADLINE_S) -> bytes:
        """Send a pre-encoded frame and return the raw response line (for benchmarks and tests)."""
        deadline = time.monotonic() + timeout
        with self._lock:
            self._write(frame, deadline)
            return self._read_line(deadline)

    def _remaining(self, deadline: float, what: str) -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CallTimeout(f"worker {self.name} did not {what} within the deadline")
        return remaining

    def _write(self, frame: bytes, deadline: float) -> None:
        view = memoryview(frame)
        while view:
            try:
                written = os.write(self._in_fd, view)
            except BlockingIOError:
                written = 0
            except (BrokenPipeError, OSError) as exc:
                raise CallError(f"worker {self.name} closed its input ({self._exit_note(exc)})") from None
            view = view[written:]
            if view:
                self._writable.select(self._remaining(deadline, "accept the request"))

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
                raise CallError(
                    f"worker {self.name} sent a response frame over the {MAX_FRAME_BYTES}-byte limit"
                )
            scan_from = len(buffer)
            # Wait first: right after a write the answer is almost never there yet.
            if not self._readable.select(self._remaining(deadline, "answer")):
                continue
            try:
                chunk = os.read(self._out_fd, _READ_CHUNK)
            except BlockingIOError:
                continue
            if not chunk:
                what = "mid-frame" if buffer else "before answering"
                raise CallError(f"worker {self.name} closed its output {what} ({self._exit_note()})")
            buffer += chunk

    def _parse(self, line: bytes, request_id: int, event: str) -> dict[str, Any]:
        if len(line) > MAX_FRAME_BYTES:
            raise CallError(f"worker {self.name} sent a response frame over the {MAX_FRAME_BYTES}-byte limit")
        try:
            frame = orjson.loads(line)
        except orjson.JSONDecodeError:
            preview = line[:80].decode("utf-8", "replace").strip()
            raise CallError(
                f"worker {self.name} wrote something that is not a JSON frame to stdout: {preview!r} "
                "(stdout is reserved for protocol frames; logs belong on stderr)"
            ) from None
        if not isinstance(frame, dict):
            raise CallError(f"worker {self.name} sent a {type(frame).__name__} frame, expected an object")
        got = frame.get("id")
        if not is_unsigned_id(got) or got != request_id:
            raise CallError(f"worker {self.name} answered id {got!r} to request id {request_id}")
        if "error" in frame:
            error = frame["error"]
            text = error if isinstance(error, str) else orjson.dumps(error).decode()
            raise ErrorFrame(f"worker {self.name} failed {event!r}: {text}")
        data = frame.get("data")
        if not isinstance(data, dict):
            raise CallError(
                f"worker {self.name} answered {event!r} with {type(data).__name__} data, expected an object"
            )
        return data

    def _exit_note(self, exc: BaseException | None = None) -> str:
        code = self.process.poll()
        if code is None:
            try:
                code = self.process.wait(0.2)
            except subprocess.TimeoutExpired:
                return str(exc) if exc else "still running"
        note = f"exit status {code}"
        tail = self.stderr.tail(500)
        return f"{note}; stderr: {tail}" if tail else note

    def close(self, grace: float = 2.0) -> None:
        """Shut down: close stdin, wait, SIGTERM the group, wait, SIGKILL the group."""
        self.broken = True
        try:
            assert self.process.stdin is not None
            self.process.stdin.close()
        except OSError:
            pass
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
