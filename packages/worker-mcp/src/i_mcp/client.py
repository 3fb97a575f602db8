"""MCP sessions kept open across calls, on one asyncio loop in a background thread.

The MCP SDK is asyncio; the i_protocol handlers are synchronous and answer one request at a
time. So the worker runs one event loop in a daemon thread and each handler hands it a coroutine
(``asyncio.run_coroutine_threadsafe``) and waits for it with a bound. A server starts on first
use and its session stays open for the next calls.

Deadlines: a call may go ``idle_timeout`` seconds (14 by default, below the core's 15 s) without
a sign of life, and lasts at most ``timeout`` seconds (60 by default) while the server reports
progress (``notifications/progress``, relayed as progress frames when the core opted in; without
the opt-in a call ends at the idle deadline). A server being listed at session start gets
``LIST_WAIT_S`` before the answer goes out without it (reason ``starting``) and goes on starting in
the background up to its ``startup_timeout``, its list then cached for the next session. A server
that exits, breaks the protocol or does not answer in time is stopped and forgotten, so the next
call starts it afresh; the failure is one ``ServerFailure`` naming the server, with the tail of
what the server wrote on stderr.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import shutil
import sys
import threading
from collections import deque
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any, TextIO, TypeVar, cast

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from i_protocol import WorkerError

from .__about__ import __version__
from .errors import ServerFailure
from .launch import TOO_LARGE
from .settings import ServerSpec, server_env, server_headers

T = TypeVar("T")
Report = Callable[[dict[str, Any]], object]
"""Relays one progress update ``{"message"?, "progress"?, "total"?}`` (a progress frame)."""
MAX_STDERR_TAIL_CHARS = 2000
"""What a problem or a failure quotes of a server's stderr: its last characters."""
LIST_WAIT_S = float(os.environ.get("I_MCP_LIST_WAIT_S") or 8.0)
"""How long ``tools_list`` waits for a server that is not cached yet before answering without it
(``I_MCP_LIST_WAIT_S`` overrides it, for tests and benches; the core passes no such variable)."""
MAX_PAGES = 100
"""tools/list pages read from one server (a server that pages forever is cut off here)."""
_BACKSTOP_S = 0.5
"""Beyond a coroutine's own deadline, how long a handler waits before it gives up on the loop."""
_CONNECTION_CLOSED = -32000
_REMOTE_FAILED = -32002
"""``i_mcp.remote.REMOTE_FAILED`` (not imported: that module loads the HTTP client)."""
REDACTED = "[redacted]"


class EventLoop:
    """One asyncio loop in a daemon thread, started on first use."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="i-mcp-loop", daemon=True).start()
                self._loop = loop
            return self._loop

    def submit(self, coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        """Start ``coroutine`` on the loop without waiting for it."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._started())

    def run(self, coroutine: Coroutine[Any, Any, T], deadline: float) -> T:
        """The coroutine's result; it must end within ``deadline`` seconds (it enforces that itself)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._started())
        try:
            return future.result(deadline + _BACKSTOP_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerFailure(f"the MCP client did not finish within {deadline:g} s") from None


class StderrTail:
    """A server's stderr through a pipe: copied to the worker's stderr, its last lines kept."""

    def __init__(self, name: str) -> None:
        read_fd, write_fd = os.pipe()
        self.writer = cast("TextIO", os.fdopen(write_fd, "w"))
        self._reader = os.fdopen(read_fd, "rb")
        self._name = name
        self._lines: deque[str] = deque(maxlen=50)
        self._thread = threading.Thread(target=self._drain, name=f"i-mcp-stderr-{name}", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._reader:
            for raw in self._reader:
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                self._lines.append(line)
                try:
                    sys.stderr.write(f"[{self._name}] {line}\n")
                    sys.stderr.flush()
                except (OSError, ValueError):
                    pass

    def close_writer(self) -> None:
        """Drop this process's copy of the write end (the server holds its own)."""
        try:
            self.writer.close()
        except OSError:
            pass

    def tail(self, wait: float = 0.0) -> str:
        """The last lines the server wrote (at most ``MAX_STDERR_TAIL_CHARS``), after waiting up to
        ``wait`` seconds for an exited server's last words."""
        if wait:
            self._thread.join(wait)
        text = "\n".join(self._lines).strip()
        return text[-MAX_STDERR_TAIL_CHARS:]


class _NoStderr:
    """A remote server's stand-in for ``StderrTail``: it writes nothing i-mcp can read."""

    def close_writer(self) -> None:
        """Nothing to close."""

    def tail(self, wait: float = 0.0) -> str:
        """Always empty."""
        return ""


class Connection:
    """One running server (or one remote session) and its initialised session, held open by a task of the loop."""

    def __init__(self, spec: ServerSpec, cwd: str | None) -> None:
        self.spec = spec
        self._cwd = spec.cwd or cwd
        self.secrets: tuple[str, ...] = ()
        """Values read from files for this server: never shown, even when the server echoes them."""
        self.stderr: StderrTail | _NoStderr
        if spec.url is not None:
            self._env: dict[str, str] = {}
            self._headers = server_headers(spec)
            self.secrets = _file_values(spec.headers, self._headers)
            self.stderr = _NoStderr()
        else:
            self._env = server_env(spec)
            # Through i_mcp.launch: a server dies with its worker, even when the worker is SIGKILLed.
            launch = ["-m", "i_mcp.launch", spec.command, *spec.args]
            self._params = StdioServerParameters(command=sys.executable, args=launch, env=self._env, cwd=self._cwd)
            self.stderr = StderrTail(spec.name)
        self._scope = anyio.CancelScope()
        self._ready = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.session: ClientSession | None = None

    @property
    def alive(self) -> bool:
        """True while the server's session is open."""
        return self._task is not None and not self._task.done() and self.session is not None

    async def open(self) -> None:
        """Start the server and initialise its session; ``ServerFailure`` when it cannot."""
        if self.spec.url is None and _program(self.spec.command, self._env, self._cwd) is None:
            self.stderr.close_writer()
            # Said here: through the launcher, a missing program is only "connection closed".
            raise ServerFailure(
                f"MCP server {self.spec.name!r} could not start: {self.spec.command}: no such program "
                "(not an executable file, nor found on PATH)"
            )
        self._task = asyncio.create_task(self._run())
        ready = asyncio.create_task(self._ready.wait())
        try:
            await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            ready.cancel()
        if self._ready.is_set():
            return
        problem = self._task.exception() if not self._task.cancelled() else None
        tail = await asyncio.to_thread(self.stderr.tail, 0.5)  # the exited server's last words
        verb = "could not start" if self.spec.url is None else f"could not connect to {self.spec.url}"
        raise ServerFailure(
            f"MCP server {self.spec.name!r} {verb}: {_describe(problem)}{_quoted(tail)}", stderr_tail=tail
        )

    async def _run(self) -> None:
        try:
            await self._serve()
        finally:
            self.stderr.close_writer()

    def _streams(self) -> contextlib.AbstractAsyncContextManager[tuple[Any, Any]]:
        """The transport: the launched program's stdio, or a remote server's streamable HTTP."""
        if self.spec.url is not None:
            from .remote import open_remote  # httpx2 and the HTTP client: only for a remote server

            return open_remote(self.spec.url, self._headers, self.spec.allow_private)
        assert isinstance(self.stderr, StderrTail)
        return stdio_client(self._params, errlog=self.stderr.writer)

    async def _serve(self) -> None:
        with self._scope:
            async with self._streams() as (read, write):
                info = types.Implementation(name="i-mcp", version=__version__)
                async with ClientSession(read, write, client_info=info) as session:
                    self.stderr.close_writer()  # the server holds its copy: EOF comes when it exits
                    await session.initialize()
                    self.session = session
                    self._ready.set()
                    await anyio.sleep_forever()

    def close(self) -> None:
        """Stop the server; the SDK's shutdown (close stdin, then kill its process tree) runs in the background."""
        self.session = None
        self._scope.cancel()

    @property
    def task(self) -> asyncio.Task[None] | None:
        """The task that holds the session open (done once the server's shutdown is over)."""
        return self._task


@dataclass(frozen=True)
class Listed:
    """One server's answer at session start: its tools, or why it has none now."""

    tools: list[dict[str, Any]] | None
    failure: WorkerError | None = None
    """A ``ServerFailure``, or a ``McpConfigError`` (a file the entry names cannot be read)."""
    starting: bool = False
    """Not started within ``LIST_WAIT_S``: it goes on starting, its list cached for the next session."""


class Servers:
    """The servers of this worker process, keyed by the digest of their mcp.json entry."""

    def __init__(self) -> None:
        self._loop = EventLoop()
        self._connections: dict[str, Connection] = {}  # touched only on the loop's thread
        self._stopping: list[Connection] = []
        self._starting: dict[str, asyncio.Task[list[dict[str, Any]]]] = {}  # loop thread only
        self.list_wait = LIST_WAIT_S

    def list_tools(
        self,
        specs: tuple[ServerSpec, ...],
        cwd: str | None,
        on_listed: Callable[[ServerSpec, list[dict[str, Any]]], None],
    ) -> list[Listed]:
        """Each server's tools, listed concurrently, within ``wait`` seconds; a server still starting
        then goes on in the background (up to its ``startup_timeout``) and ``on_listed`` gets its
        tools when it is done (every listed server's tools go there, on the loop's thread)."""
        if not specs:
            return []
        wait = self.list_wait

        async def every() -> list[Listed]:
            tasks = [self._listing(spec, cwd, on_listed) for spec in specs]
            await asyncio.wait(tasks, timeout=wait)
            return [_listed(task) for task in tasks]

        return self._loop.run(every(), wait)

    def _listing(
        self, spec: ServerSpec, cwd: str | None, on_listed: Callable[[ServerSpec, list[dict[str, Any]]], None]
    ) -> asyncio.Task[list[dict[str, Any]]]:
        """The task that starts and lists ``spec`` (one per server, shared by repeated requests)."""
        found = self._starting.get(spec.digest)
        if found is not None and not found.done():
            return found

        async def listing() -> list[dict[str, Any]]:
            async def start_and_list() -> list[dict[str, Any]]:
                session, _ = await self._session(spec, cwd, join=False)
                return await _tools_of(session)

            tools = await self._guarded(spec, start_and_list(), "its start", spec.startup_timeout, None)
            on_listed(spec, tools)
            return tools

        task = self._starting[spec.digest] = asyncio.ensure_future(listing())
        task.add_done_callback(_said_in_background)
        return task

    def call(
        self, spec: ServerSpec, tool: str, arguments: dict[str, Any], cwd: str | None, report: Report | None = None
    ) -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
        """One tools/call (start-up included) and the server's tool list when this call started it (so a
        changed list reaches the cache for the next session). With ``report`` the server's progress
        notifications are relayed to it and keep the call alive up to the server's ``timeout``."""
        total = spec.timeout if report is not None else min(spec.timeout, spec.idle_timeout)
        return self._loop.run(self._call(spec, tool, arguments, cwd, report, total), total)

    async def _call(
        self,
        spec: ServerSpec,
        tool: str,
        arguments: dict[str, Any],
        cwd: str | None,
        report: Report | None,
        total: float,
    ) -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
        alive = _Liveness()

        async def relay(progress: float, total: float | None, message: str | None) -> None:
            alive.touch()
            update: dict[str, Any] = {"progress": progress}
            if total is not None:
                update["total"] = total
            if message:
                update["message"] = message
            if report is not None:
                report(update)

        async def calling() -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
            session, started = await self._session(spec, cwd)
            alive.touch()  # its start-up had the idle deadline; the call gets its own
            result = await session.call_tool(tool, arguments, progress_callback=relay if report is not None else None)
            if not isinstance(result, types.CallToolResult):
                raise ServerFailure(f"MCP server {spec.name!r} answered the call of {tool!r} with no tool result")
            return _redacted(result, self._secrets(spec)), (await _tools_of(session) if started else None)

        return await self._guarded(spec, calling(), f"the call of {tool!r}", total, alive)

    async def _guarded(
        self, spec: ServerSpec, work: Coroutine[Any, Any, T], what: str, total: float, alive: _Liveness | None
    ) -> T:
        """``work`` within ``total`` seconds, and ``spec.idle_timeout`` seconds since ``alive`` last moved
        (when given); any failure but a refused request forgets the server."""
        try:
            return await _within(work, total, spec.idle_timeout if alive is not None else total, alive)
        except WorkerError:  # ServerFailure, or an env file that cannot be read
            self._forget(spec)
            raise
        except _Idle:
            tail = self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} neither answered {what} nor reported progress for {spec.idle_timeout:g} s; "
                f"it was stopped and starts again on the next call{_quoted(tail)}",
                stderr_tail=tail,
            ) from None
        except TimeoutError:
            tail = self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} did not answer {what} within {total:g} s; "
                f"it was stopped and starts again on the next call{_quoted(tail)}",
                stderr_tail=tail,
            ) from None
        except MCPError as exc:
            message = _scrub(exc.message, self._secrets(spec))
            if exc.code == TOO_LARGE:  # i_mcp.launch (or i_mcp.remote) did not pass the answer on
                raise ServerFailure(f"MCP server {spec.name!r}: {what} failed: {message}") from None
            if exc.code == _REMOTE_FAILED:  # refused by the egress rules, or the server could not be reached
                self._forget(spec)
                raise ServerFailure(
                    f"MCP server {spec.name!r}: {what} failed: {message}; it is connected again on the next call"
                ) from None
            if exc.code == _CONNECTION_CLOSED and spec.url is not None:
                self._forget(spec)
                raise ServerFailure(
                    f"MCP server {spec.name!r}: its connection closed during {what} ({message}); "
                    "it is connected again on the next call"
                ) from None
            if exc.code != _CONNECTION_CLOSED:
                raise ServerFailure(f"MCP server {spec.name!r} refused {what}: {message}") from None
            tail = self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} exited during {what} (connection closed); it starts again on the next "
                f"call{_quoted(tail)}",
                stderr_tail=tail,
            ) from None
        except Exception as exc:  # a broken reply: the SDK's validation, a pipe error
            tail = self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} failed during {what}: {_describe(exc)}{_quoted(tail)}", stderr_tail=tail
            ) from None

    async def _session(self, spec: ServerSpec, cwd: str | None, *, join: bool = True) -> tuple[ClientSession, bool]:
        """The server's open session, and whether it was started just now (``join``: after the start
        ``tools_list`` began, when it is still under way)."""
        starting = self._starting.get(spec.digest)
        if join and starting is not None and not starting.done():
            # Started at session start and still starting: wait for that start (its deadline holds).
            await asyncio.wait({starting})
        connection = self._connections.get(spec.digest)
        started = connection is None or not connection.alive
        if started:
            if connection is not None:
                connection.close()
            connection = self._connections[spec.digest] = Connection(spec, cwd)
            await connection.open()
        assert connection is not None and connection.session is not None
        return connection.session, started

    def _secrets(self, spec: ServerSpec) -> tuple[str, ...]:
        connection = self._connections.get(spec.digest)
        return connection.secrets if connection is not None else ()

    def _forget(self, spec: ServerSpec) -> str:
        """Stop and forget the server; the tail of its stderr so far."""
        connection = self._connections.pop(spec.digest, None)
        if connection is None:
            return ""
        connection.close()
        self._stopping = [c for c in self._stopping if c.task is not None and not c.task.done()]
        self._stopping.append(connection)
        return connection.stderr.tail()

    def close_all(self, grace: float) -> None:
        """Stop every server, those already stopping included, waiting at most ``grace`` seconds."""

        async def stop() -> None:
            for task in self._starting.values():
                task.cancel()
            for connection in self._connections.values():
                connection.close()
            tasks = {c.task for c in (*self._connections.values(), *self._stopping) if c.task is not None}
            self._connections.clear()
            if tasks:
                await asyncio.wait(tasks, timeout=grace)

        try:
            self._loop.run(stop(), grace)
        except ServerFailure:
            pass  # a server that outlives the grace is left to the SDK's kill of its process tree


class _Idle(Exception):
    """No sign of life (an answer, a progress notification) within the idle deadline."""


class _Liveness:
    """When the work last showed it was alive (its start, each progress notification)."""

    def __init__(self) -> None:
        self.last = asyncio.get_running_loop().time()

    def touch(self) -> None:
        self.last = asyncio.get_running_loop().time()


async def _within(work: Coroutine[Any, Any, T], total: float, idle: float, alive: _Liveness | None) -> T:
    """``work``'s result; ``TimeoutError`` past ``total`` seconds, ``_Idle`` past ``idle`` seconds since
    ``alive`` last moved. The work is cancelled (and awaited) either way."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work)
    end = loop.time() + total
    try:
        while True:
            idle_end = (alive.last if alive is not None else loop.time()) + idle
            wait = min(end, idle_end) - loop.time()
            if wait <= 0:
                raise TimeoutError if loop.time() >= end else _Idle
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                return task.result()
    finally:
        if not task.done():
            task.cancel()
            await asyncio.wait({task})


def _listed(task: asyncio.Task[list[dict[str, Any]]]) -> Listed:
    if not task.done():
        return Listed(None, starting=True)
    if task.cancelled():
        return Listed(None, ServerFailure("its start was cancelled"))
    problem = task.exception()
    if problem is None:
        return Listed(task.result())
    if isinstance(problem, WorkerError):
        return Listed(None, problem)
    raise problem


def _said_in_background(task: asyncio.Task[list[dict[str, Any]]]) -> None:
    """A start that failed after ``tools_list`` answered is said on stderr (and its exception retrieved)."""
    if not task.cancelled() and task.exception() is not None:
        print(f"i-mcp: {task.exception()}", file=sys.stderr)


def _file_values(entries: tuple[tuple[str, object], ...], values: dict[str, str]) -> tuple[str, ...]:
    """The values of ``values`` that came from a file (``{"file": PATH}`` entries), longest first."""
    from .settings import EnvFile

    found = {values[key] for key, entry in entries if isinstance(entry, EnvFile) and key in values}
    found |= {value.removeprefix("Bearer ").strip() for value in found}
    return tuple(sorted((value for value in found if len(value) >= 4), key=len, reverse=True))


def _scrub(text: str, secrets: tuple[str, ...]) -> str:
    for secret in secrets:
        text = text.replace(secret, REDACTED)
    return text


def _redacted(result: types.CallToolResult, secrets: tuple[str, ...]) -> types.CallToolResult:
    """``result`` with every secret of its server that it echoes replaced by ``[redacted]``."""
    if not secrets:
        return result
    content = [
        block.model_copy(update={"text": _scrub(block.text, secrets)})
        if isinstance(block, types.TextContent)
        else block
        for block in result.content
    ]
    return result.model_copy(update={"content": content})


def _quoted(tail: str) -> str:
    return f"; its stderr ends: {tail}" if tail else ""


async def _tools_of(session: ClientSession) -> list[dict[str, Any]]:
    """Every page of tools/list, as ``{"name", "description", "input_schema"}``, without the tools that
    can only run as MCP tasks (``execution.taskSupport: "required"``: i-mcp does not run tasks)."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema}
            for t in page.tools
            if not (t.execution is not None and t.execution.task_support == "required")
        ]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _describe(problem: BaseException | None) -> str:
    if problem is None:
        return "it stopped before its session was initialised"
    if isinstance(problem, BaseExceptionGroup) and problem.exceptions:
        return _describe(problem.exceptions[0])
    if isinstance(problem, OSError) and problem.strerror:
        return f"{problem.strerror}{': ' + str(problem.filename) if problem.filename else ''}"
    if isinstance(problem, MCPError):
        return problem.message
    return f"{type(problem).__name__}: {problem}" if str(problem) else type(problem).__name__


def _program(command: str, env: dict[str, str], cwd: str | None) -> str | None:
    """The executable ``command`` names, as the launcher's ``execvp`` will find it, or None."""
    if os.sep in command:
        path = command if os.path.isabs(command) else os.path.join(cwd or os.getcwd(), command)
        return path if os.path.isfile(path) and os.access(path, os.X_OK) else None
    return shutil.which(command, path=env.get("PATH", os.environ.get("PATH", os.defpath)))
