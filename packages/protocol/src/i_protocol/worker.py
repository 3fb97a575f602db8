"""The worker side: register hook and tool handlers, then serve NDJSON frames on stdin/stdout."""

from __future__ import annotations

import os
import sys
import threading
from typing import TYPE_CHECKING, Any, NoReturn

from .__about__ import PROTOCOL_VERSION
from ._event_names import ANY_EVENT, EVENTS, is_event
from .config import ConfigCache, WorkerConfig, discover_config_path
from .context import Paths, RequestContext, parse_context, paths_from_env
from .errors import ConfigError, ProtocolError, WorkerError
from .framing import (
    MAX_FRAME_BYTES,
    decode_frame,
    encode_frame,
    is_unsigned_id,
    peek_id,
    read_line,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from typing import BinaryIO, TypeVar

    HookHandler = Callable[[dict[str, Any], "Request"], dict[str, Any]]
    ConfigCheck = Callable[[WorkerConfig, Paths], "str | None"]
    ToolHandler = Callable[[dict[str, Any], "Request"], "str | dict[str, Any]"]
    F = TypeVar("F", bound=Callable[..., Any])

TOOL_EVENT = "tool"
CHECK_CONFIG_FLAG = "--check-config"
"""``PROGRAM --check-config [--config FILE]``: validate the config without serving (``Worker.main``)."""
CONFIG_OK = "config ok: "
"""The start of the one stdout line of a passing ``--check-config`` (exit 0): what was checked."""
CONFIG_INVALID = "config invalid: "
"""The start of the one stdout line of a failing ``--check-config`` (exit ``EXIT_CONFIG``): the problem,
naming the file and the field. Any other outcome means the program did not check (not one of ours,
or an older one)."""
EXIT_CONFIG = 3


class Request:
    """One validated request as a handler sees it: event, data and its context."""

    __slots__ = ("_context", "_paths", "_worker", "data", "event", "frame", "id")

    def __init__(self, worker: Worker, frame: dict[str, Any], context: RequestContext) -> None:
        self.id: int = frame["id"]
        self.event: str = frame["event"]
        self.data: dict[str, Any] = frame["data"]
        self.frame = frame
        self._context = context
        self._worker = worker
        self._paths: Paths | None = None

    @property
    def workspace(self) -> str | None:
        """The top-level ``workspace`` path the host sent, if any."""
        return self._context.workspace

    @property
    def paths(self) -> Paths:
        """Explicit request ``paths``, else ``I_*_DIR``, else the platformdirs defaults."""
        if self._paths is None:
            self._paths = self._context.explicit_paths or self._worker.env_paths()
        return self._paths

    def config(self) -> WorkerConfig:
        """This module's config: ``--config FILE`` if given, else ``config_dir/<module>.json``."""
        return self._worker.load_config(self.paths.config_dir)

    def config_path(self) -> str:
        """Where this module's config is read from (``--config FILE``, else ``config_dir/<module>.json``,
        which may not exist)."""
        return self._worker.config_path(self.paths.config_dir)

    def workspace_id(self) -> str:
        """The explicit ``workspace_id``, else the registry's id for ``workspace``."""
        if self._context.workspace_id is not None:
            return self._context.workspace_id
        if self._context.workspace is None:
            raise WorkerError("request has neither workspace_id nor workspace; cannot locate workspace state")
        return self._worker.workspace_id_for(self._context.workspace, self.paths.data_dir)

    @property
    def wants_progress(self) -> bool:
        """True when the host opted in to progress frames for this request (``"progress": true``)."""
        return self.frame.get("progress") is True

    def report_progress(
        self, message: str | None = None, progress: float | None = None, total: float | None = None
    ) -> bool:
        """Write a progress frame for this request (SPEC §3.4), from any thread, while it is handled.

        Only real progress of the work is reported, never a timer's. False (nothing written) when the
        host did not opt in, or once the request was answered (a late report is dropped, never sent
        after the answer, where the host would read it as the next answer).
        """
        if not self.wants_progress:
            return False
        body: dict[str, Any] = {}
        if message is not None:
            body["message"] = message
        if progress is not None:
            body["progress"] = progress
        if total is not None:
            body["total"] = total
        return self._worker.emit_progress(self.id, body)

    def state_dir(self) -> Path:
        """``data_dir/workspaces/<id>/``: this workspace's persistent state folder."""
        from .workspace import workspace_state_dir

        return workspace_state_dir(self.workspace_id(), self.paths.data_dir)


class Worker:
    """A worker program: hook handlers per event, tool handlers per tool name, and a serve loop."""

    def __init__(
        self, module: str, version: str, *, dist_name: str | None = None, extensions: Sequence[str] = ()
    ) -> None:
        self.module = module
        self.version = version
        self.dist_name = dist_name or f"i-{module}"
        self.extensions = tuple(extensions)
        """The extension names (``i_protocol.handshake.EXTENSIONS``) this worker declares in ``hello``."""
        self._hooks: dict[str, HookHandler] = {}
        self._tools: dict[str, ToolHandler] = {}
        self._commands: dict[str, Callable[[list[str]], int]] = {}
        self._config_override: str | None = None
        self._config_cache = ConfigCache()
        self._config_check: ConfigCheck | None = None
        self._check_at_request = True
        self._checked: dict[str, WorkerConfig] = {}  # config path -> the loaded config that passed
        self._env_paths: Paths | None = None
        self._workspace_ids: dict[tuple[str, str], str] = {}
        self._frames_out: BinaryIO | None = None
        self._progress_lock = threading.Lock()
        self._progress_id: int | None = None  # the request whose progress may be written now

    # -- registration -------------------------------------------------------------------

    def hook(self, *events: str, extension: bool = False) -> Callable[[F], F]:
        """Register the decorated function as the handler of each of ``events``.

        Each name must be an event of ``i_protocol.events`` (or ``*``, every event without its own
        handler): a misspelled name raises ``ValueError`` here instead of never being called.
        ``extension=True`` registers names this i-protocol does not know (an event newer than the
        installed i-protocol, or one of the worker's own).
        """
        for event in events:
            if event == TOOL_EVENT:
                raise ValueError("use Worker.tool() to handle tool calls")
            if not extension and event != ANY_EVENT and not is_event(event):
                raise ValueError(
                    f"{self.dist_name}: unknown event {event!r}; known events: {', '.join(EVENTS)}, * "
                    "(a newer event: Worker.hook(name, extension=True))"
                )

        def register(func: F) -> F:
            for event in events:
                if event in self._hooks:
                    raise ValueError(f"event {event!r} already has a handler")
                self._hooks[event] = func
            return func

        return register

    def tool(self, name: str) -> Callable[[F], F]:
        """Register the decorated function as the handler of tool ``name``."""

        def register(func: F) -> F:
            if name in self._tools:
                raise ValueError(f"tool {name!r} already has a handler")
            self._tools[name] = func
            return func

        return register

    def config_check(self, *, at_request: bool = True) -> Callable[[F], F]:
        """Register the decorated ``func(config, paths)`` as this worker's config check: it raises a
        ``ConfigError`` (or any ``ProtocolError``) naming the file and the field, and may return
        what it checked when that is not the module's own config file (budget: config.json).

        It runs for ``PROGRAM --check-config`` and, with ``at_request``, before the first request of a
        handled event for each config file (again when the file changes), so a typo fails that first
        call with an error frame of kind ``config`` instead of surfacing at the call that reads the
        field. A worker whose config check runs at requests declares ``config_kind`` in ``hello``.
        """

        def register(func: F) -> F:
            if self._config_check is not None:
                raise ValueError("this worker already has a config check")
            self._config_check = func
            self._check_at_request = at_request
            return func

        return register

    def check_config(self, paths: Paths) -> str:
        """Load this module's config for ``paths`` and run the registered config check on it (once per
        loaded file); every failure is a ``ConfigError``. Returns what was checked (a file, or
        ``<file> absent (defaults)``)."""
        config = self.load_config(paths.config_dir)
        checked = config.path or f"{self.config_path(paths.config_dir)} absent (defaults)"
        if self._config_check is None or self._checked.get(config.path or "") is config:
            return checked
        try:
            said = self._config_check(config, paths)
        except ConfigError:
            raise
        except ProtocolError as exc:  # a package's own error type: still a configuration error
            raise ConfigError(str(exc)) from exc
        self._checked[config.path or ""] = config
        return said or checked

    def command(self, name: str) -> Callable[[F], F]:
        """Register a CLI subcommand (``i-cache report ...``): ``func(argv) -> exit code``."""

        def register(func: F) -> F:
            if name.startswith("-") or name in self._commands:
                raise ValueError(f"invalid or duplicate command {name!r}")
            self._commands[name] = func
            return func

        return register

    @property
    def events(self) -> list[str]:
        """Events this worker handles (``tool`` included when it has tools)."""
        return sorted(self._hooks) + ([TOOL_EVENT] if self._tools else [])

    @property
    def tools(self) -> list[str]:
        """Names of the tools this worker provides."""
        return sorted(self._tools)

    # -- context ------------------------------------------------------------------------

    def env_paths(self) -> Paths:
        """Directories from the environment, resolved once per process."""
        if self._env_paths is None:
            self._env_paths = paths_from_env()
        return self._env_paths

    def workspace_id_for(self, workspace: str, data_dir: str) -> str:
        """The registry's id of ``workspace``, remembered for this process (bindings never change)."""
        key = (workspace, data_dir)
        found = self._workspace_ids.get(key)
        if found is None:
            from .workspace import workspace_id_for

            found = self._workspace_ids[key] = workspace_id_for(workspace, data_dir)
        return found

    def load_config(self, config_dir: str) -> WorkerConfig:
        """Load this module's config for ``config_dir`` (cached until the file changes)."""
        path, explicit = discover_config_path(self.module, config_dir, self._config_override)
        return self._config_cache.load(path, required=explicit)

    def config_path(self, config_dir: str) -> str:
        """The path ``load_config`` reads for ``config_dir`` (it may not exist)."""
        return discover_config_path(self.module, config_dir, self._config_override)[0]

    # -- dispatch -----------------------------------------------------------------------

    def handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        """Answer one parsed request frame with a response frame (never raises)."""
        raw_id = frame.get("id")
        if not is_unsigned_id(raw_id):
            raise _NoId(f"request has no valid id (must be an unsigned integer), got {raw_id!r}")
        request_id: int = raw_id  # type: ignore[assignment]
        progress = frame.get("progress") is True
        if progress:
            with self._progress_lock:
                self._progress_id = request_id
        try:
            data = self._dispatch(frame)
        except ProtocolError as exc:
            answer: dict[str, Any] = {"id": request_id, "error": str(exc) or type(exc).__name__}
            if exc.kind is not None:
                answer["kind"] = exc.kind
            return answer
        except Exception as exc:  # a handler bug must not kill the loop
            import traceback

            traceback.print_exc(file=sys.stderr)
            return {"id": request_id, "error": f"{self.dist_name}: internal error: {type(exc).__name__}: {exc}"}
        finally:
            if progress:
                with self._progress_lock:
                    self._progress_id = None
        return {"id": request_id, "data": data}

    def emit_progress(self, request_id: int, body: dict[str, Any]) -> bool:
        """Write ``{"id", "progress": body}`` now, while request ``request_id`` is being handled (any
        thread); False when it is not (answered already) or there is no frame stream (in-process use)."""
        with self._progress_lock:
            if self._progress_id != request_id or self._frames_out is None:
                return False
            try:
                frame = encode_frame({"id": request_id, "progress": body})
            except ProtocolError:
                return False
            return self._write(self._frames_out, frame)

    def _dispatch(self, frame: dict[str, Any]) -> dict[str, Any]:
        event = frame.get("event")
        if not isinstance(event, str) or not event:
            raise WorkerError("request event must be a non-empty string")
        data = frame.get("data", {})
        if not isinstance(data, dict):
            raise WorkerError(f"request data must be an object, got {type(data).__name__}")
        frame["data"] = data
        if event == "hello" and "hello" not in self._hooks:
            return self.hello()  # protocol-level: answered without a request context
        context = parse_context(frame)
        if event == TOOL_EVENT:
            request = Request(self, frame, context)
            if self._config_check is not None and self._check_at_request:
                self.check_config(request.paths)
            return self._call_tool(request)
        handler = self._hooks.get(event) or self._hooks.get(ANY_EVENT)
        if handler is None:
            return data  # an event this worker does not handle goes back unchanged
        request = Request(self, frame, context)
        if self._config_check is not None and self._check_at_request:
            self.check_config(request.paths)
        result = handler(data, request)
        if not isinstance(result, dict):
            raise WorkerError(f"handler for event {event!r} returned {type(result).__name__}, expected an object")
        return result

    def _call_tool(self, request: Request) -> dict[str, Any]:
        name = request.data.get("name")
        if not isinstance(name, str):
            raise WorkerError("tool request data.name must be a string")
        handler = self._tools.get(name)
        if handler is None:
            known = ", ".join(self.tools) or "none"
            raise WorkerError(f"unknown tool {name!r}; {self.dist_name} provides: {known}")
        arguments = request.data.get("arguments", {})
        if not isinstance(arguments, dict):
            raise WorkerError(f"tool {name!r}: arguments must be an object, got {type(arguments).__name__}")
        result = handler(arguments, request)
        if isinstance(result, str):
            return {"output": result}
        if not isinstance(result, dict) or not isinstance(result.get("output"), str):
            raise WorkerError(f"tool {name!r} returned no string 'output'")
        return result

    def hello(self) -> dict[str, Any]:
        """This worker's answer to ``hello`` (SPEC §3.4): package, version, protocol, library, extensions."""
        from .__about__ import __version__ as library
        from .handshake import hello_answer

        extensions = self.extensions
        if self._config_check is not None and self._check_at_request and "config_kind" not in extensions:
            extensions = (*extensions, "config_kind")
        return hello_answer(self.dist_name, self.version, library, extensions)

    def handle_line(self, line: bytes) -> bytes:
        """Answer one raw request line with one response frame."""
        try:
            frame = decode_frame(line)
        except ProtocolError as exc:
            request_id = peek_id(line)
            if request_id is None:
                raise _NoId(f"unreadable request: {exc}") from None
            return self._error_bytes(request_id, str(exc))
        response = self.handle(frame)
        try:
            return encode_frame(response)
        except ProtocolError as exc:
            return self._error_bytes(response["id"], f"{self.dist_name}: response rejected: {exc}")

    @staticmethod
    def _error_bytes(request_id: int, message: str) -> bytes:
        return encode_frame({"id": request_id, "error": message})

    # -- serving ------------------------------------------------------------------------

    def serve(self, reader: BinaryIO, writer: BinaryIO) -> int:
        """Serve frames until EOF; returns the process exit code.

        Every response is flushed at once. A frame whose id cannot be read is answered with a
        message on stderr and a non-zero exit, because no response could be matched to it.
        """
        self._frames_out = writer
        while True:
            line, oversized = read_line(reader)
            if not line:
                return 0
            if oversized:
                request_id = peek_id(line)
                message = f"request frame exceeds the {MAX_FRAME_BYTES}-byte limit"
                if request_id is None:
                    return _fatal(f"{message} and its id cannot be read")
                self._write(writer, self._error_bytes(request_id, message))
                continue
            truncated = not line.endswith(b"\n")
            try:
                response = self.handle_line(line)
            except _NoId as exc:
                return _fatal(str(exc))
            if truncated:
                request_id = peek_id(line)
                message = "request frame has no terminating newline (input ended mid-frame)"
                if request_id is not None:
                    self._write(writer, self._error_bytes(request_id, message))
                return _fatal(message)
            if not self._write(writer, response):
                return 0

    @staticmethod
    def _write(writer: BinaryIO, frame: bytes) -> bool:
        try:
            writer.write(frame)
            writer.flush()
        except BrokenPipeError:
            return False
        return True

    def version_line(self) -> str:
        """What ``--version`` prints: distribution, version, protocol version."""
        return f"{self.dist_name} {self.version} (i-protocol {PROTOCOL_VERSION})"

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Console entry: ``--version``, ``--config FILE``, ``--help``, ``--check-config``; then serve
        stdin/stdout (unless ``--check-config``)."""
        args = list(sys.argv[1:] if argv is None else argv)
        if args and args[0] in self._commands:
            return self._commands[args[0]](args[1:])
        check_only = False
        while args:
            arg = args.pop(0)
            if arg == "--version":
                print(self.version_line())
                return 0
            if arg in ("-h", "--help"):
                print(self._usage())
                return 0
            if arg == "--config" and args:
                self._config_override = args.pop(0)
            elif arg.startswith("--config="):
                self._config_override = arg.split("=", 1)[1]
            elif arg == CHECK_CONFIG_FLAG:
                check_only = True
            else:
                print(f"{self.dist_name}: unknown argument {arg!r}\n{self._usage()}", file=sys.stderr)
                return 2
        if self._config_override is not None and not os.path.isfile(self._config_override):
            problem = f"--config {self._config_override}: file does not exist"
            if check_only:
                print(f"{CONFIG_INVALID}{problem}")
                return EXIT_CONFIG
            print(f"{self.dist_name}: {problem}", file=sys.stderr)
            return 2
        if check_only:
            return self._check_config_command()
        reader, writer = protect_stdio()
        try:
            return self.serve(reader, writer)
        except KeyboardInterrupt:
            return 130

    def run(self, argv: Sequence[str] | None = None, *, version: Callable[[list[str]], bool] | None = None) -> NoReturn:
        """A worker package's console script once its i-protocol check passed: ``version(argv)``
        answers ``--version`` when given (the package's ``preflight.answer_version``), else ``main``;
        then ``exit_fast`` with its code."""
        args = list(sys.argv[1:] if argv is None else argv)
        if version is not None and version(args):
            exit_fast(0)
        exit_fast(self.main(args))

    def _check_config_command(self) -> int:
        """``--check-config``: one line, ``config ok: ...`` on stdout (0) or the problem on stderr (3);
        2 when this worker has no config check."""
        if self._config_check is None:
            print(f"{self.dist_name}: this worker has no config check", file=sys.stderr)
            return 2
        try:
            checked = self.check_config(self.env_paths())
        except ProtocolError as exc:
            print(f"{CONFIG_INVALID}{' '.join(str(exc).split())}")
            return EXIT_CONFIG
        print(f"{CONFIG_OK}{checked}")
        return 0

    def _usage(self) -> str:
        return (
            f"usage: {self.dist_name} [--config FILE] [--version] [{CHECK_CONFIG_FLAG}]"
            + "".join(f"\n       {self.dist_name} {name} ..." for name in sorted(self._commands))
            + "\n"
            f"Serves the i worker protocol {PROTOCOL_VERSION} (NDJSON) on stdin/stdout.\n"
            f"events: {', '.join(self.events) or 'none'}; tools: {', '.join(self.tools) or 'none'}"
        )


class _NoId(ProtocolError):
    """A request whose id cannot be read: no response can be matched to it."""


def _fatal(message: str) -> int:
    print(f"i-protocol: {message}; stopping", file=sys.stderr, flush=True)
    return 2


def protect_stdio() -> tuple[BinaryIO, BinaryIO]:
    """Reserve the real stdout for frames and point fd 1 and ``sys.stdout`` at stderr.

    After this, a stray ``print`` or a C library writing to fd 1 lands on stderr and can
    never corrupt the frame stream.
    """
    sys.stdout.flush()
    frame_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    writer = os.fdopen(frame_fd, "wb", buffering=1 << 16)
    return sys.stdin.buffer, writer


def exit_fast(code: int | None) -> NoReturn:
    """End the program now with ``code`` (``None``: 0), for a console entry point once ``main`` returned.

    ``atexit`` handlers run and ``sys.stdout``/``sys.stderr`` are flushed, then the process exits
    without the interpreter's teardown (freeing every module and object: 4-10 ms of CPU for a
    worker, more for the core, paid while the host waits for its workers to exit). Call it only
    after everything the program wrote is closed or flushed: buffered files left open are not.
    """
    import atexit

    try:
        atexit._run_exitfuncs()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed or broken pipe: nothing more can be said
                pass
        os._exit(code or 0)
