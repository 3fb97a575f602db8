"""MCP sessions kept open across calls, on one asyncio loop in a background thread.

The MCP SDK is asyncio; the i_protocol handlers are synchronous and answer one request at a
time. So the worker runs one event loop in a daemon thread and each handler hands it a coroutine
(``asyncio.run_coroutine_threadsafe``) and waits for it with a bound. A server starts on first
use and its session stays open for the next calls. Every request to a server (its start-up
included) has the server's deadline (``timeout``, 10 s by default, below the core's 15 s); a
server that exits, breaks the protocol or does not answer in time is stopped and forgotten, so
the next call starts it afresh, and the failure is one ``ServerFailure`` naming the server.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import shutil
import sys
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

import anyio
import mcp.types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

from i_protocol import WorkerError

from .__about__ import __version__
from .errors import ServerFailure
from .settings import ServerSpec, server_env

T = TypeVar("T")
MAX_PAGES = 100
"""tools/list pages read from one server (a server that pages forever is cut off here)."""
_BACKSTOP_S = 0.5
"""Beyond a coroutine's own deadline, how long a handler waits before it gives up on the loop."""
_CONNECTION_CLOSED = -32000


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

    def run(self, coroutine: Coroutine[Any, Any, T], deadline: float) -> T:
        """The coroutine's result; it must end within ``deadline`` seconds (it enforces that itself)."""
        future = asyncio.run_coroutine_threadsafe(coroutine, self._started())
        try:
            return future.result(deadline + _BACKSTOP_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise ServerFailure(f"the MCP client did not finish within {deadline:g} s") from None


class Connection:
    """One running server and its initialised session, held open by a task of the loop."""

    def __init__(self, spec: ServerSpec, cwd: str | None) -> None:
        self.spec = spec
        self._cwd = spec.cwd or cwd
        self._env = server_env(spec)
        # Through i_mcp.launch: a server dies with its worker, even when the worker is SIGKILLed.
        launch = ["-m", "i_mcp.launch", spec.command, *spec.args]
        self._params = StdioServerParameters(command=sys.executable, args=launch, env=self._env, cwd=self._cwd)
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
        if _program(self.spec.command, self._env, self._cwd) is None:
            # Said here: through the launcher, a missing program is only "connection closed".
            raise ServerFailure(
                f"MCP server {self.spec.name!r} could not start: {self.spec.command}: no such program "
                "(not an executable file, nor found on PATH)"
            )
        self._task = asyncio.create_task(self._run())
        ready = asyncio.create_task(self._ready.wait())
        await asyncio.wait({self._task, ready}, return_when=asyncio.FIRST_COMPLETED)
        if self._ready.is_set():
            return
        ready.cancel()
        problem = self._task.exception() if not self._task.cancelled() else None
        raise ServerFailure(f"MCP server {self.spec.name!r} could not start: {_describe(problem)}")

    async def _run(self) -> None:
        with self._scope:
            async with stdio_client(self._params, errlog=sys.stderr) as (read, write):
                info = types.Implementation(name="i-mcp", version=__version__)
                async with ClientSession(read, write, client_info=info) as session:
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


class Servers:
    """The servers of this worker process, keyed by the digest of their mcp.json entry."""

    def __init__(self) -> None:
        self._loop = EventLoop()
        self._connections: dict[str, Connection] = {}  # touched only on the loop's thread
        self._stopping: list[Connection] = []

    def list_tools(self, specs: tuple[ServerSpec, ...], cwd: str | None) -> list[list[dict[str, Any]]]:
        """Each server's tools (``name``, ``description``, ``input_schema``), listed concurrently."""
        if not specs:
            return []
        deadline = max(spec.timeout for spec in specs)

        async def every() -> list[list[dict[str, Any]]]:
            return list(await asyncio.gather(*(self._list(spec, cwd) for spec in specs)))

        return self._loop.run(every(), deadline)

    def call(
        self, spec: ServerSpec, tool: str, arguments: dict[str, Any], cwd: str | None
    ) -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
        """One tools/call within the server's deadline (start-up included), and the server's tool list
        when this call started it (so a changed list reaches the cache for the next session)."""
        return self._loop.run(self._call(spec, tool, arguments, cwd), spec.timeout)

    async def _list(self, spec: ServerSpec, cwd: str | None) -> list[dict[str, Any]]:
        async def listing() -> list[dict[str, Any]]:
            session, _ = await self._session(spec, cwd)
            return await _tools_of(session)

        return await self._guarded(spec, listing(), "tools/list")

    async def _call(
        self, spec: ServerSpec, tool: str, arguments: dict[str, Any], cwd: str | None
    ) -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
        async def calling() -> tuple[types.CallToolResult, list[dict[str, Any]] | None]:
            session, started = await self._session(spec, cwd)
            result = await session.call_tool(tool, arguments)
            return result, (await _tools_of(session) if started else None)

        return await self._guarded(spec, calling(), f"the call of {tool!r}")

    async def _guarded(self, spec: ServerSpec, work: Coroutine[Any, Any, T], what: str) -> T:
        """``work`` within the server's deadline; any failure but a refused request forgets the server."""
        try:
            async with asyncio.timeout(spec.timeout):
                return await work
        except WorkerError:  # ServerFailure, or an env file that cannot be read
            self._forget(spec)
            raise
        except TimeoutError:
            self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} did not answer {what} within {spec.timeout:g} s; "
                "it was stopped and starts again on the next call"
            ) from None
        except MCPError as exc:
            if exc.code != _CONNECTION_CLOSED:
                raise ServerFailure(f"MCP server {spec.name!r} refused {what}: {exc.message}") from None
            self._forget(spec)
            raise ServerFailure(
                f"MCP server {spec.name!r} exited during {what} (connection closed); it starts again on the next call"
            ) from None
        except Exception as exc:  # a broken reply: the SDK's validation, a pipe error
            self._forget(spec)
            raise ServerFailure(f"MCP server {spec.name!r} failed during {what}: {_describe(exc)}") from None

    async def _session(self, spec: ServerSpec, cwd: str | None) -> tuple[ClientSession, bool]:
        """The server's open session, and whether it was started just now."""
        connection = self._connections.get(spec.digest)
        started = connection is None or not connection.alive
        if started:
            if connection is not None:
                connection.close()
            connection = self._connections[spec.digest] = Connection(spec, cwd)
            await connection.open()
        assert connection is not None and connection.session is not None
        return connection.session, started

    def _forget(self, spec: ServerSpec) -> None:
        connection = self._connections.pop(spec.digest, None)
        if connection is not None:
            connection.close()
            self._stopping = [c for c in self._stopping if c.task is not None and not c.task.done()]
            self._stopping.append(connection)

    def close_all(self, grace: float) -> None:
        """Stop every server, those already stopping included, waiting at most ``grace`` seconds."""

        async def stop() -> None:
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


async def _tools_of(session: ClientSession) -> list[dict[str, Any]]:
    """Every page of tools/list, as ``{"name", "description", "input_schema"}``."""
    tools: list[dict[str, Any]] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor) if cursor else None)
        tools += [
            {"name": t.name, "description": t.description or "", "input_schema": t.input_schema} for t in page.tools
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
