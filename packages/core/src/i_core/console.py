"""The `i` console: ``i "task"`` runs one task (piped stdin attached, ``i_core.piped``); ``i`` on a
TTY is a line console; without a TTY, each line of stdin is one request in the same session.

Exit codes: 0 done, 1 internal error (a bug), 2 usage, 3 configuration, session or a file the run
needs, 4 model/API, 5 budget exhausted, 6 worker failure, 130 interrupted, 143 terminated (see
errors.py; cli.run_cli prints the one line).
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .errors import ConfigError, CoreError
from .redaction import Redactor
from .terminal_text import clip, for_terminal

if TYPE_CHECKING:
    from .providers import ModelReply

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="i",
        description="i: an agent runtime for the terminal.",
        epilog="Runtime commands: i --runtime "
        "{init,manifest,paths,hook,compact,sessions,cache-report,check,versions,worker,logo} --help",
    )
    parser.add_argument("task", nargs="*", help="the task; without it, a console (TTY) or one request per stdin line")
    parser.add_argument("-C", dest="workspace", default=".", metavar="DIR", help="the project folder (default: .)")
    parser.add_argument("--config", metavar="FILE", help="API config file (default: config_dir/config.json)")
    parser.add_argument("--manifest", metavar="FILE", help="a hand-written manifest (default: config_dir/builtin.json)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--session", metavar="FILE", help="session file to continue or create")
    group.add_argument("--session-name", metavar="NAME", help="session in the project's .i/sessions/NAME.json")
    group.add_argument(
        "--continue",
        "-c",
        dest="continue_",
        action="store_true",
        help="continue the project's most recently saved session",
    )
    parser.add_argument(
        "--yolo",
        "--dangerously-skip-permissions",
        dest="yolo",
        action="store_true",
        help="run every tool without asking (the approval policy can still deny)",
    )
    parser.add_argument("--no-stream", action="store_true", help="wait for whole replies instead of streaming")
    parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    parser.add_argument("--no-logo", action="store_true", help="no logo when the console opens on a terminal")
    parser.add_argument(
        "--json",
        action="store_true",
        help="with a task: print one JSON object (answer, usage, tool calls, session, exit) on stdout",
    )
    return parser


class Screen:
    """The terminal as stdout (the answer) and stderr (progress, notes, prompts) share it.

    The progress line lives on stderr and is erased *before* anything else is written, so the
    answer is never overwritten; a progress line or note after streamed text that did not end its
    line starts on a fresh line. Colour (dim notes) only on a TTY and without ``NO_COLOR``.

    Outside text never drives the terminal (``terminal_text``): the answer is sanitised when
    stdout is a terminal (piped, it stays byte-exact), every note and progress line always;
    :meth:`failure` also scrubs secrets (``redaction``).
    """

    def __init__(self, out: TextIO, err: TextIO, *, progress: bool, redactor: Redactor | None = None) -> None:
        self.out, self.err = out, err
        self.err_tty = err_tty = _isatty(err)
        self.out_tty = _isatty(out)
        self.same_terminal = err_tty and self.out_tty
        self.redactor = redactor if redactor is not None else Redactor()
        self._held_cr = False  # streamed answer text ended with "\r": a CR LF split between chunks?
        self.progress_enabled = progress and err_tty
        self.color = err_tty and "NO_COLOR" not in os.environ
        self.shown = False  # a progress line is on screen
        self.last_progress = ""
        self.midline = False  # the answer's last text did not end its line
        self.lock = threading.RLock()

    def _dim(self, text: str) -> str:
        return f"\x1b[2m{text}\x1b[0m" if self.color else text

    def progress(self, message: str) -> None:
        """Show ``[i] message…`` on its own line (replacing an earlier progress line)."""
        if not self.progress_enabled:
            return
        with self.lock:
            self._fresh_line()
            self.err.write("\r\x1b[2K" + self._dim(f"[i] {for_terminal(message)}…"))
            self.err.flush()
            self.shown = True
            self.last_progress = message

    def typed_line(self, line: str) -> None:
        """A note about a line the user typed mid-turn: the terminal echoed it onto the progress
        line (the cursor is now below it), so that line is redrawn as the note, progress after it."""
        with self.lock:
            if self.shown:
                self.err.write("\x1b[1A\r\x1b[2K")
                self.shown = False
            self.note(line, dim=True)
            if self.last_progress:
                self.progress(self.last_progress)

    def clear(self) -> None:
        """Erase the progress line, leaving the cursor at its start."""
        with self.lock:
            if self.shown:
                self.err.write("\r\x1b[2K")
                self.err.flush()
                self.shown = False

    def interrupted(self) -> None:
        """After Ctrl-C: the terminal echoed ``^C`` where the cursor was; erase it on its own row."""
        with self.lock:
            if self.shown:
                self.clear()
            elif not self.midline and self.err_tty:
                self.err.write("\r\x1b[2K")
                self.err.flush()

    def _fresh_line(self) -> None:
        if self.midline and self.same_terminal:
            self.out.write("\n")
            self.out.flush()
            self.midline = False

    def write(self, text: str) -> None:
        """Answer text (streamed or whole) on stdout: the progress line goes first."""
        with self.lock:
            self.clear()
            if self.out_tty:
                text = self._for_tty(text)
            self.out.write(text)
            self.out.flush()
            if text:
                self.midline = not text.endswith("\n")

    def _for_tty(self, text: str) -> str:
        # A CR at the end of a chunk may be the first half of a CR LF line end: held until the next.
        if self._held_cr:
            text, self._held_cr = "\r" + text, False
        if text.endswith("\r"):
            text, self._held_cr = text[:-1], True
        return for_terminal(text)

    def end_answer(self) -> None:
        """The final newline after an answer whose text did not end with one."""
        with self.lock:
            self.clear()
            if self._held_cr:
                self._held_cr = False
                self.out.write(for_terminal("\r"))
                self.midline = True
            if self.midline:
                self.out.write("\n")
                self.out.flush()
                self.midline = False

    def note(self, line: str, *, dim: bool = False, end: str = "\n") -> None:
        """One line on stderr (a notice, a prompt, the status line) below whatever is on screen."""
        line = for_terminal(line)
        with self.lock:
            self.clear()
            self._fresh_line()
            self.err.write((self._dim(line) if dim else line) + end)
            self.err.flush()

    def failure(self, line: str) -> None:
        """A note that reports a failure: its text may quote a server or a worker, so secrets are
        scrubbed from it first."""
        self.note(self.redactor.scrub(line))

    def brand(self, drawing: str) -> None:
        """The core's own logo, escapes included: the one write that is not sanitised."""
        with self.lock:
            self.clear()
            self._fresh_line()
            self.err.write(drawing)
            self.err.flush()


class _AnswerStream:
    """What the agent writes streamed text to (``AgentOptions.out``), and what the console knows of
    the turn's replies: a later response's text starts apart from the text before it (a turn's
    responses would otherwise run together: "...information.I found..."), and the last reply says
    whether the answer was cut at the output limit or was a refusal."""

    def __init__(self, screen: Screen | None) -> None:
        self.screen = screen
        self.last_reply: ModelReply | None = None
        self._tail = ""  # the last characters of this turn's text
        self._new_response = False

    def begin_turn(self) -> None:
        """A new turn: nothing written yet, no reply seen."""
        self._tail, self._new_response, self.last_reply = "", False, None

    def response_started(self) -> None:
        """A model request is about to be sent: its text is a new run."""
        self._new_response = True

    def write(self, text: str) -> int:
        if text and self._new_response:
            from .providers.reply import block_break

            text = block_break(self._tail, text) + text
            self._new_response = False
        self._tail = (self._tail + text)[-2:]
        if self.screen is not None:
            self.screen.write(text)
        return len(text)

    def flush(self) -> None:
        pass

    def notes(self) -> list[str]:
        """What the user must know about the turn's answer beyond its text (stderr lines)."""
        reply = self.last_reply
        if reply is None:
            return []
        notes = []
        if reply.finish_reason == "length":
            notes.append(
                "[i] the answer was cut at the output limit (max_tokens in config.json, or a module's cap such "
                "as smoke's --output-cap); it is incomplete"
            )
        if reply.meta.get("refusal"):
            notes.append("[i] the model refused the request; the answer is its refusal")
        return notes


def _isatty(stream: object) -> bool:
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, ValueError):
        return False


MAX_PREVIEW_LINES = 60


def change_preview(prepared: object, limit: int = MAX_PREVIEW_LINES) -> str | None:
    """A unified diff of what an ``edit`` or ``write`` would do, at most ``limit`` lines."""
    import difflib

    name = getattr(prepared, "name", None)
    path = getattr(prepared, "path", None)
    arguments = getattr(prepared, "arguments", None) or {}
    if name not in ("edit", "write") or path is None:
        return None
    try:
        old = Path(path).read_bytes().decode("utf-8", "replace") if Path(path).exists() else ""
    except OSError:
        return None
    if name == "write":
        new = str(arguments.get("content", ""))
    else:
        old_string, new_string = str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))
        new = (
            old.replace(old_string, new_string)
            if arguments.get("replace_all")
            else old.replace(old_string, new_string, 1)
        )
    shown = str(arguments.get("path", path))
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{shown}", f"b/{shown}", lineterm="", n=3))
    if not lines:
        return "(no change to the text)"
    if len(lines) > limit:
        rest = len(lines) - limit
        lines = [*lines[:limit], f"… {rest} more line{'s' if rest != 1 else ''}"]
    # Control characters of a file must not reach the terminal as such.
    return "\n".join(for_terminal(line) for line in lines)


_ANSWERS = {"y": "y", "yes": "y", "a": "a", "always": "a", "d": "d", "deny": "d", "n": "n", "no": "n"}
PROMPT_LINES = 4
"""Terminal lines of a tool call the approval prompt shows before it says how much more there is."""


def ask_on_tty(
    screen: Screen, reader: _LineQueue | None = None, read_line: Callable[[], str] | None = None
) -> Callable[..., str]:
    """The approval question on the terminal: ``ask(summary, detail)`` -> ``y`` / ``n`` / ``a`` / ``d``.

    The call is shown sanitised and whole up to :data:`PROMPT_LINES` terminal lines; past that the
    question says how many characters it does not show, and ``v`` prints them all and asks again.
    Anything but yes/always/deny (Enter included) is No.
    """
    import shutil

    def ask(summary: str, detail: str | None = None) -> str:
        if reader is not None:
            reader.pause()
        try:
            if detail:
                screen.note(detail)
            whole = for_terminal(summary)
            width = max(shutil.get_terminal_size().columns, 40)
            shown, rest = clip(whole, PROMPT_LINES * width - 100, PROMPT_LINES)
            more = f"… (+{rest} more characters; press v to view all)" if rest else ""
            while True:
                screen.note(
                    f"[i] allow {shown}{more}? [y]es / [N]o / [a]lways this session / [d]eny this session"
                    + (" / [v]iew all: " if rest else ": "),
                    end="",
                )
                answer = (read_line or sys.stdin.readline)().strip().lower()
                if answer not in ("v", "view"):
                    return _ANSWERS.get(answer, "n")
                screen.note(f"[i] the whole call ({len(whole)} characters):\n{whole}")
        finally:
            if reader is not None:
                reader.resume()

    return ask


class _LineQueue:
    """While a turn runs, lines typed on the terminal are appended to the steering queue file.

    A background thread polls stdin (the terminal is in its normal line mode while a turn runs) and
    stops before the prompt comes back, so it never competes with readline.
    """

    def __init__(self, path: Path, screen: Screen) -> None:
        self.path = path
        self.screen = screen
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._buffer = b""
        self.queued: list[str] = []
        self.commands: list[str] = []

    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="i-steering-reader", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self._thread = None

    pause = stop
    resume = start

    def _run(self) -> None:
        import select

        fd = sys.stdin.fileno()
        while not self._stop.is_set():
            try:
                ready, _, _ = select.select([fd], [], [], 0.05)
                if not ready:
                    continue
                chunk = os.read(fd, 4096)
            except (OSError, ValueError):
                return
            if not chunk:
                return
            self._buffer += chunk
            while b"\n" in self._buffer:
                line, self._buffer = self._buffer.split(b"\n", 1)
                text = line.decode("utf-8", "replace").strip()
                if text.startswith("/"):
                    self.commands.append(text)  # a console command, run when the prompt is back
                elif text:
                    self.add(text)

    def add(self, text: str) -> str:
        """Append one entry to the queue file; its id."""
        import uuid

        import orjson

        entry = {"id": uuid.uuid4().hex, "text": text, "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, orjson.dumps(entry) + b"\n")
        finally:
            os.close(fd)
        self.queued.append(entry["id"])
        self.screen.typed_line(f"[i] queued for the next request: {text[:80]}")
        return entry["id"]

    def take_partial(self) -> str:
        """A line typed but not finished when the turn ended (for the next prompt)."""
        text, self._buffer = self._buffer.decode("utf-8", "replace"), b""
        return text.strip()


def _session_path(args: argparse.Namespace, workspace: str, state_dir: Path) -> Path:
    if args.session:
        return Path(args.session)
    if args.session_name:
        from .session import session_path_for_name

        return session_path_for_name(workspace, args.session_name)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return state_dir / "sessions" / f"{stamp}-{os.getpid()}.json"


def _continue_path(workspace: str, workspace_id: str, state_dir: Path) -> Path:
    from .session import latest_session

    path = latest_session(workspace, workspace_id, state_dir)
    if path is None:
        raise ConfigError(
            f"--continue: {workspace} has no saved session of this workspace to continue "
            "(`i --runtime sessions` lists them)"
        )
    return path


def run_console(argv: list[str], redactor: Redactor | None = None) -> int:
    """Run the agent as the command line asks; expected failures raise CoreError.

    ``redactor`` learns the configured API key's value here, so that the caller scrubs it from
    whatever failure it prints."""
    if hasattr(sys.stdin, "reconfigure"):
        # A stdin line with bytes that are not UTF-8 keeps them (as lone surrogates), like argv does.
        sys.stdin.reconfigure(errors="surrogateescape")
    from i_protocol import paths_from_env

    from .config import load_api_config
    from .hooks import HookRunner
    from .runtime import Runtime
    from .selection import bound_provider, check_protocol, with_steering

    parser = _parser()
    args = parser.parse_args(argv)
    if args.json and not args.task:
        parser.error('--json needs a task: i "task" --json')
    paths = paths_from_env()
    config_path = Path(args.config) if args.config else Path(paths.config_dir) / "config.json"
    config = load_api_config(config_path)
    redactor = redactor if redactor is not None else Redactor()
    if config.api_key_env:
        redactor.add(config.api_key_env, config.api_key())
    if config.api_key_env and config.api_key() is None:
        from urllib.parse import urlsplit

        if (urlsplit(config.base_url).hostname or "") not in _LOOPBACK:
            raise ConfigError(
                f"{config.source}: the environment variable {config.api_key_env} (api_key_env) is not set"
            )
    manifest = Path(args.manifest) if args.manifest else None
    interactive = not args.task and sys.stdin.isatty() and sys.stderr.isatty()
    runtime = Runtime(args.workspace, manifest_path=manifest, io_limit_bytes=config.io_limit_bytes, paths=paths)
    check_protocol(config, runtime.manifest)  # before any worker starts
    provider = bound_provider(config, runtime.manifest)
    if provider is not None:  # the first request goes to it: it starts with the first hooks' workers
        runtime.also_start.append(provider)
    if args.continue_:
        session_file = _continue_path(runtime.workspace, runtime.workspace_id, runtime.state_dir)
    else:
        session_file = _session_path(args, runtime.workspace, runtime.state_dir)
    screen = Screen(sys.stdout, sys.stderr, progress=not args.quiet, redactor=redactor)
    reader = None
    if interactive:
        # The console's steering worker: profiles do not remove it, bindings.json may replace it.
        queue = session_file.expanduser().absolute().with_name(session_file.name.removesuffix(".json") + ".queue.jsonl")
        runtime.manifest = with_steering(runtime.manifest, runtime.config_dir, queue)
        runtime.hooks = HookRunner(
            runtime.manifest, runtime.pool, {"workspace": runtime.workspace, "workspace_id": runtime.workspace_id}
        )
        reader = _LineQueue(queue, screen)
    _project_mcp(runtime, screen, ask=sys.stdin.isatty() and sys.stderr.isatty() and not args.yolo)
    with runtime:
        # While the first workers start (and MCP servers' tools are listed): httpx is imported on a
        # helper thread, and the agent and the session are loaded here.
        from .transport import warm_up

        warm_up()
        attached = _piped_input(screen, quiet=args.quiet) if args.task else []
        from .agent import Agent, AgentOptions
        from .session import open_session

        runtime.ready()  # a worker that failed to list its tools ends the run before a session is opened
        for problem in runtime.hooks.problems:  # a server left out: said once, the session goes on
            screen.failure(f"i: warning: {problem}")
        session = open_session(
            session_file,
            runtime.workspace,
            runtime.workspace_id,
            private=not (args.session or args.session_name or args.continue_),
        )
        if reader is not None:
            reader.path.parent.mkdir(parents=True, exist_ok=True)
        ask = ask_on_tty(screen, reader) if sys.stdin.isatty() and sys.stderr.isatty() else None
        options = AgentOptions(
            yolo=args.yolo,
            ask=ask,
            preview=change_preview,
            stream=False if args.no_stream else None,
            progress=screen.progress,
            notice=lambda line: screen.note(f"i: {line}"),
            out=_AnswerStream(None if args.json else screen),
        )
        agent = Agent(runtime, config, session, options)
        meter = _UsageMeter(agent)
        answer: str | None = None
        failure: BaseException | None = None
        try:
            if interactive and not args.no_logo:
                _logo(screen)
            agent.start()
            if args.continue_ and not args.quiet:
                screen.note(f"[i] continuing {session.path} ({len(session.messages)} messages)", dim=True)
            if args.task:
                answer = _one(agent, " ".join(args.task), screen, show=not args.json, attached=attached)
            elif interactive:
                assert reader is not None
                _console(agent, screen, reader, meter)
            else:
                for line in sys.stdin:
                    if line.strip():
                        _one(agent, line.strip(), screen)
        except KeyboardInterrupt as exc:
            _stop_interrupted(exc)
            failure = exc
            raise
        except BaseException as exc:
            failure = exc
            raise
        finally:
            screen.end_answer()
            agent.close()
            session.close()
            if args.json:
                _print_json_result(agent, session.path, answer, meter, failure, redactor)
            if not args.quiet:
                _summary(agent, session.path, screen)
    return 0


def _project_mcp(runtime: object, screen: Screen, *, ask: bool) -> None:
    """Pass the project's ``.mcp.json`` to the MCP worker once the user approved it (``project_mcp``)."""
    from .project_mcp import project_context
    from .runtime import Runtime

    assert isinstance(runtime, Runtime)
    if not runtime.hooks.subscribers("tools_list"):
        return

    def yes(question: str) -> bool:
        screen.note(f"[i] {question} [y/N]: ", end="")
        return sys.stdin.readline().strip().lower() in ("y", "yes")

    found = project_context(
        runtime.workspace, runtime.workspace_id, runtime.paths.data_dir, yes if ask else None, screen.note
    )
    if found is not None:
        runtime.hooks.context["mcp_project"] = found


class _UsageMeter:
    """Usage summed over a run's model requests (the agent keeps only the last one)."""

    def __init__(self, agent: object) -> None:
        from .agent import Agent

        assert isinstance(agent, Agent)
        self.total: dict[str, int] = {}
        self.requests = 0
        model = agent.model
        complete = model.complete
        out = agent.options.out

        def counted(*args: object, **kwargs: object) -> object:
            if isinstance(out, _AnswerStream):
                out.response_started()
            reply = complete(*args, **kwargs)  # type: ignore[arg-type]
            if isinstance(out, _AnswerStream):
                out.last_reply = reply
            self.requests += 1
            for key, value in (getattr(reply, "usage", None) or {}).items():
                if isinstance(value, int) and not isinstance(value, bool):
                    self.total[key] = self.total.get(key, 0) + value
            return reply

        model.complete = counted  # type: ignore[method-assign,assignment]


def _logo(screen: Screen) -> None:
    """The brand on stderr as the console opens (a TTY only; never part of a prompt or the history)."""
    from .brand import can_draw_blocks, render_text

    screen.brand(render_text(color=screen.color, ascii_only=not can_draw_blocks(screen.err)))


def _print_json_result(
    agent: object,
    path: Path,
    answer: str | None,
    meter: _UsageMeter,
    failure: BaseException | None,
    redactor: Redactor,
) -> None:
    """``i "task" --json``: one JSON object on stdout, whatever happened; the answer exactly as the
    model sent it, the error without secrets."""
    import orjson

    from .agent import Agent
    from .cli import describe_failure
    from .errors import EXIT_INTERRUPTED

    assert isinstance(agent, Agent)
    result: dict[str, object] = {
        "answer": answer,
        "exit": 0,
        "error": None,
        "usage": {"requests": meter.requests, **meter.total, "last": agent.model.last_usage},
        "tool_calls": list(agent.stats.tools.asked),
        "tool_call_counts": agent.stats.tools.as_json(),
        "compactions": agent.stats.compactions,
        "compact_attempts": agent.stats.compact_attempts,
        "budget": agent.stats.last_budget,
        "images_left_out": agent.stats.images_left_out,
        "session": str(path) if path.exists() else None,
        "warnings": [redactor.scrub(line) for line in agent.hooks.problems],
    }
    last = agent.options.out.last_reply if isinstance(agent.options.out, _AnswerStream) else None
    # Whether the answer is all there: cut at the output limit, or the model's refusal.
    result["truncated"] = last is not None and last.finish_reason == "length"
    result["refusal"] = last is not None and bool(last.meta.get("refusal"))
    if isinstance(failure, KeyboardInterrupt):
        result.update(exit=EXIT_INTERRUPTED, error="interrupted")
    elif isinstance(failure, SystemExit):
        result.update(exit=failure.code if isinstance(failure.code, int) else 1, error="terminated")
    elif failure is not None:
        message, code = describe_failure(failure)
        result.update(exit=code, error=redactor.scrub(message))
    sys.stdout.write(orjson.dumps(result, default=str).decode() + "\n")
    sys.stdout.flush()


def _stop_interrupted(exc: BaseException) -> None:
    """After Ctrl-C: kill what the interrupted call was running (no replay).

    The frames the KeyboardInterrupt passed through name it: a shell tool's process (its whole
    process group, started with ``start_new_session``) and a worker caught mid-call (killed, so the
    pool evicts it and a later call starts a fresh one instead of reading a stale answer).
    """
    import signal
    import subprocess

    from i_protocol.host import WorkerProcess

    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        owner = frame.f_locals.get("self")
        if isinstance(owner, WorkerProcess):
            owner.kill()
        process = frame.f_locals.get("process")
        if isinstance(process, subprocess.Popen) and frame.f_globals.get("__name__", "").startswith("i_core.tools"):
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            try:
                process.wait(5)
            except subprocess.TimeoutExpired:
                pass
        tb = tb.tb_next


def _piped_input(screen: Screen, *, quiet: bool) -> list[dict[str, Any]]:
    """The text part of piped stdin for the task (``i_core.piped``), said on stderr; [] without one."""
    from .piped import read_piped

    piped = read_piped(sys.stdin.fileno())
    if piped is None or (piped.text is None and not piped.silent and not piped.binary):
        return []
    warn = piped.cut or piped.stopped or piped.binary
    if not quiet or warn:
        screen.note(piped.note(), dim=not warn)
    return [piped.part()] if piped.text is not None else []


def _one(
    agent: object, text: str | None, screen: Screen, *, show: bool = True, attached: Sequence[dict[str, Any]] = ()
) -> str:
    from .agent import Agent

    assert isinstance(agent, Agent)
    out = agent.options.out
    if isinstance(out, _AnswerStream):
        out.begin_turn()
    answer = agent.run(text, attached=attached)
    if show and not agent.model.stream:
        screen.write(answer)
    screen.end_answer()
    if isinstance(out, _AnswerStream):
        for note in out.notes():
            screen.note(note)
    return answer


def _console(agent: object, screen: Screen, reader: _LineQueue, meter: _UsageMeter) -> None:
    import copy

    from .agent import Agent
    from .compaction import describe

    assert isinstance(agent, Agent)
    try:
        import readline
    except ImportError:
        readline = None  # type: ignore[assignment]
    screen.note("i — type a request; while it runs, type to queue more; Ctrl-C cancels; /compact, /exit")
    prefill = ""
    armed = False  # the last thing was a Ctrl-C: one more at the prompt exits
    while True:
        if readline is not None and prefill:

            def insert(text: str = prefill) -> None:
                readline.insert_text(text)

            readline.set_startup_hook(insert)
        try:
            line = reader.commands.pop(0) if reader.commands else input("> ")
        except EOFError:
            screen.note("")
            return
        except KeyboardInterrupt:
            if armed:
                screen.note("")
                return
            armed = True
            screen.note("\n[i] Ctrl-C again to exit", dim=True)
            prefill = ""
            continue
        finally:
            if readline is not None:
                readline.set_startup_hook(None)
        prefill = ""
        armed = False
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/compact":
            try:
                screen.note(describe(agent.compact(agent.history, force=True)))
            except CoreError as exc:
                screen.failure(f"i: {exc}")
            continue
        session = agent.session
        saved, meta = session.messages, copy.deepcopy(session.meta)
        before = agent.history
        reader.start()
        try:
            _one(agent, text, screen)
        except KeyboardInterrupt as exc:
            _stop_interrupted(exc)
            screen.interrupted()
            screen.end_answer()
            # Nothing of the turn after the last checkpoint stays, in memory as on disk.
            agent.history = list(session.messages) if session.messages else before
            if session.messages is saved:
                session.meta.clear()
                session.meta.update(meta)
            screen.note("[i] cancelled; nothing after the last checkpoint was saved (Ctrl-C again to exit)", dim=True)
            prefill = text
            armed = True
            continue
        except CoreError as exc:
            screen.end_answer()
            screen.failure(f"i: {exc}")
        finally:
            reader.stop()
            partial = reader.take_partial()
            if partial and not prefill:
                prefill = partial
        screen.note(status_line(agent), dim=True)
        if _pending(agent, reader) and not prefill:
            # Typed while the model worked and not delivered inside that turn: the next user message.
            _queued_turn(agent, screen, reader)


def _pending(agent: object, reader: _LineQueue) -> list[str]:
    """Queued ids no message of the history carries yet."""
    from .agent import Agent

    assert isinstance(agent, Agent)
    delivered = {m.get("_steering") for m in agent.history if isinstance(m, dict)}
    return [ident for ident in reader.queued if ident not in delivered]


def _queued_turn(agent: object, screen: Screen, reader: _LineQueue) -> None:
    """Turns that start from the queue alone (``Agent.run(None)``), while anything is pending."""
    from .agent import Agent

    assert isinstance(agent, Agent)
    while _pending(agent, reader):
        before = len(agent.history)
        reader.start()
        try:
            _one(agent, None, screen)
        except KeyboardInterrupt as exc:
            _stop_interrupted(exc)
            screen.interrupted()
            screen.end_answer()
            agent.history = list(agent.session.messages) or agent.history
            screen.note("[i] cancelled; the queued input stays queued for the next request", dim=True)
            return
        except CoreError as exc:
            screen.end_answer()
            screen.failure(f"i: {exc}")
            return
        finally:
            reader.stop()
        screen.note(status_line(agent), dim=True)
        if len(agent.history) == before:
            return  # the steering worker delivered nothing (replaced by one that does not?)


def context_used(usage: dict[str, object], budget: dict[str, object]) -> int | None:
    """Tokens the context holds after the last reply: the server's own count of that request and its
    answer when it gave one, else the budget's estimate of the request (conservative before any
    usage: shown as is, it read "8,780 of 8,000 (110%)" after a request the server took as 3,089)."""
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        return tokens_in + tokens_out
    estimate = budget.get("estimate")
    return estimate if isinstance(estimate, int) else None


def status_line(agent: object) -> str:
    """Tokens of the last request, cache share, context used of the window, compactions."""
    from .agent import Agent

    assert isinstance(agent, Agent)
    usage = agent.model.last_usage or {}
    tokens_in, tokens_out = usage.get("input_tokens"), usage.get("output_tokens")
    parts = []
    if isinstance(tokens_in, int) and isinstance(tokens_out, int):
        tokens = f"tokens in {tokens_in:,} / out {tokens_out:,}"
        cached = usage.get("cache_read_tokens")
        if isinstance(cached, int) and tokens_in > 0:
            tokens += f" (cache read {round(100 * cached / tokens_in)}%)"
        parts.append(tokens)
    else:
        parts.append("tokens unknown")
    budget = agent.stats.last_budget or {}
    used, window = context_used(usage, budget), budget.get("context_window")
    if used is not None and isinstance(window, int) and window > 0:
        parts.append(f"context {used:,} of {window:,} ({round(100 * used / window)}%)")
    else:
        parts.append("context unknown (no budget module)")
    parts.append(f"{agent.stats.compactions} compaction{'s' if agent.stats.compactions != 1 else ''}")
    return "[i] " + " · ".join(parts)


def tool_call_summary(tools: object) -> str:
    """``3 tool call(s) asked, 1 run, 2 refused (write, read)``: the tools in the order first called."""
    from .tool_calls import ToolCallCounts

    assert isinstance(tools, ToolCallCounts)
    counts = tools.as_json()
    names = ", ".join(dict.fromkeys(tools.asked)) or "none"
    return f"{counts['asked']} tool call(s) asked, {counts['run']} run, {counts['refused']} refused ({names})"


def _summary(agent: object, path: Path, screen: Screen) -> None:
    from .agent import Agent

    assert isinstance(agent, Agent)
    stats = agent.stats
    line = (
        f"[i] {stats.model_requests} model request(s), {tool_call_summary(stats.tools)}, "
        f"{stats.compactions} compaction(s) of {stats.compact_attempts} attempt(s)"
    )
    if stats.last_failure:
        line += f" (last failed: {screen.redactor.scrub(stats.last_failure)[:200]})"
    if stats.rejections:
        line += f", {stats.rejections} context-length refusal(s) by the server"
    # A run that failed before its first checkpoint has no session file to point at.
    line += f"; session: {path}" if path.exists() else "; no session was saved"
    budget = stats.last_budget
    if budget and isinstance(budget.get("estimate"), int):
        line += f"; budget estimate {budget['estimate']}"
        if isinstance(budget.get("trigger"), int | float):
            line += f" of trigger {int(budget['trigger'])}"
    screen.note(line)
