"""The composition root of `i`: each command wired from the modules it needs.

``run_agent`` (``i "task"``, line mode, the console) builds the API config (its key's value taught
to the redactor), the runtime and its manifest, the bound provider, the session and the agent, and
hands them to the terminal's parts: ``screen`` for every path, ``console`` (the line console) and
``approval_prompt`` only where a terminal can use them. The ``cmd_*`` functions are ``i --runtime
COMMAND`` (``cmd_compact`` wires a session and an agent too). ``cli`` parses the arguments and calls
these; it, ``screen``, ``console`` and ``approval_prompt`` only talk to the terminal and wire nothing.

**Lazy imports live here.** This module imports what a command runs when the command runs, so
that each path loads only its own modules: ``i "task"`` never loads the line console, readline, the
approval prompt without a terminal to ask on, or a runtime command's modules, and ``i --runtime
paths`` never loads the agent. The core's other modules import at module level, but for a few that
say why in place (the i-protocol check in ``preflight`` and ``__main__``, one bundled worker in
``bundled``, the failure line in ``errors``, httpx in ``transport`` and ``initialise``, the secret
table in ``redaction`` and ``tools/recall``); the core's architecture test
(``tests/test_architecture.py``) lists them, and counts every function-level import when it looks
for import cycles.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from i_protocol import Paths, ProtocolError, paths_from_env

from .errors import EXIT_CONFIG, EXIT_INTERRUPTED, ConfigError, describe_failure, os_problem
from .redaction import Redactor
from .terminal_text import for_terminal

if TYPE_CHECKING:
    from .agent import Agent
    from .console import LineQueue
    from .providers import ModelReply
    from .runtime import Runtime
    from .screen import Screen
    from .settings import ApiConfig
    from .stream_json import EventStream

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


class UsageMeter:
    """Usage summed over a run's model requests (the agent keeps only the last one): a
    ``model.ReplyObserver`` of the agent's model client."""

    def __init__(self) -> None:
        self.total: dict[str, int] = {}
        self.requests = 0

    def request_started(self) -> None:
        """Counted when its reply comes."""

    def reply_received(self, reply: ModelReply) -> None:
        """Add the reply's integer usage fields to the totals."""
        self.requests += 1
        for key, value in (reply.usage or {}).items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.total[key] = self.total.get(key, 0) + value


def run_agent(args: argparse.Namespace, redactor: Redactor | None = None) -> int:
    """Run the agent as the command line asks (``cli.agent_parser``); expected failures raise CoreError.

    ``redactor`` learns the configured API key's value here, so that the caller scrubs it from
    whatever failure it prints."""
    if hasattr(sys.stdin, "reconfigure"):
        # A stdin line with bytes that are not UTF-8 keeps them (as lone surrogates), like argv does.
        sys.stdin.reconfigure(errors="surrogateescape")
    redactor = redactor if redactor is not None else Redactor()
    if getattr(args, "output_format", "text") != "stream-json":
        return _run_agent(args, redactor)
    from .stream_json import EventStream

    events = EventStream(redactor=redactor)
    events.start()
    try:
        _run_agent(args, redactor, events)
    except BaseException as exc:
        code = _exit_code(exc)
        events.error(_failure_text(exc), code)
        events.end(code)
        raise
    events.end(0)
    return 0


def _failure_text(exc: BaseException) -> str:
    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, SystemExit):
        return "terminated"
    return describe_failure(exc)[0]


def _exit_code(exc: BaseException) -> int:
    if isinstance(exc, KeyboardInterrupt):
        return EXIT_INTERRUPTED
    if isinstance(exc, SystemExit):
        return exc.code if isinstance(exc.code, int) else 1
    return describe_failure(exc)[1]


def _run_agent(args: argparse.Namespace, redactor: Redactor, events: EventStream | None = None) -> int:
    """The run, its events (``--output-format stream-json``) told to ``events``."""
    from .runtime import Runtime
    from .screen import Screen
    from .selection import bound_provider, check_protocol

    paths = paths_from_env()
    config = _api_config(args, paths, redactor)
    manifest = Path(args.manifest) if args.manifest else None
    # The event stream is never a console: without a task it reads stdin line by line.
    interactive = events is None and not args.task and sys.stdin.isatty() and sys.stderr.isatty()
    runtime = Runtime(args.workspace, manifest_path=manifest, io_limit_bytes=config.io_limit_bytes, paths=paths)
    check_protocol(config, runtime.manifest)  # before any worker starts
    provider = bound_provider(config, runtime.manifest)
    if provider is not None:  # the first request goes to it: it starts with the first hooks' workers
        runtime.also_start.append(provider)
    session_file = _session_file(args, runtime)
    # With the event stream, stdout carries events only: anything else the run writes goes to stderr.
    screen = Screen(
        sys.stdout if events is None else sys.stderr, sys.stderr, progress=not args.quiet, redactor=redactor
    )
    if events is None:
        _terminal_parts(screen, quiet=args.quiet, render=not args.json)
    reader = _steering_reader(runtime, session_file, screen) if interactive else None
    _project_mcp(runtime, screen, ask=sys.stdin.isatty() and sys.stderr.isatty() and not args.yolo)
    with runtime:
        # While the first workers start (and MCP servers' tools are listed): httpx is imported on a
        # helper thread, and the agent and the session are loaded here.
        from .transport import warm_up

        warm_up()
        attached = _piped_input(screen, quiet=args.quiet) if args.task else []
        agent = _agent(args, runtime, config, session_file, screen, reader, events)
        _run(agent, args, screen, reader, attached, redactor, events)
    return 0


def _terminal_parts(screen: Screen, *, quiet: bool, render: bool) -> None:
    """The text paths' tool activity on stderr (``activity``; none with ``--quiet``) and, on a
    terminal stdout, the markdown renderer of answers (``render``; rich itself loads at the first
    answer, so a piped one-shot run never imports it)."""
    if not quiet:
        from .activity import Activity

        screen.activity = Activity(screen)
    if render and screen.out_tty:
        from .render import MarkdownRenderer

        screen.renderer = MarkdownRenderer()


def _project_mcp(runtime: Runtime, screen: Screen, *, ask: bool) -> None:
    """Pass the project's ``.mcp.json`` to the MCP worker once the user approved it (``project_mcp``)."""
    from .project_mcp import project_context

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


def _api_config(args: argparse.Namespace, paths: Paths, redactor: Redactor) -> ApiConfig:
    """config.json (or ``--config``), its API key's value taught to ``redactor``; a key that is not
    set is a ConfigError unless the server is on loopback."""
    from urllib.parse import urlsplit

    from .settings import load_api_config

    config = load_api_config(Path(args.config) if args.config else Path(paths.config_dir) / "config.json")
    if getattr(args, "model", None):  # for this run: the usage anchor is the same model's only (SPEC §4)
        config = dataclasses.replace(config, model=args.model)
    for each in (config, *config.models.values()):  # /model may switch to any of them
        if each.api_key_env:
            redactor.add(each.api_key_env, each.api_key())
    missing = config.api_key_env and config.api_key() is None
    if missing and (urlsplit(config.base_url).hostname or "") not in _LOOPBACK:
        raise ConfigError(f"{config.source}: the environment variable {config.api_key_env} (api_key_env) is not set")
    return config


def _session_file(args: argparse.Namespace, runtime: Runtime) -> Path:
    """The session the run continues or creates: ``--continue``'s latest, ``--session``,
    ``--session-name``, or a new file in the workspace's state folder."""
    from .session import latest_session, session_path_for_name

    resume = getattr(args, "resume", None)
    if resume:
        return _resumed(resume, runtime)
    if args.continue_ or resume == "":
        path = latest_session(runtime.workspace, runtime.workspace_id, runtime.state_dir)
        if path is None:
            raise ConfigError(
                f"--continue: {runtime.workspace} has no saved session of this workspace to continue "
                "(`i --runtime sessions` lists them)"
            )
        return path
    if args.session:
        return Path(args.session)
    if args.session_name:
        path = session_path_for_name(runtime.workspace, args.session_name)
        default = runtime.state_dir / "sessions" / f"{args.session_name}.json"
        if not path.exists() and default.exists():  # the two namespaces stay apart: say which one to take
            raise ConfigError(
                f"--session-name {args.session_name}: the project has no session of that name ({path}), but the "
                f"default sessions have one: {default}; continue it with `i --resume {args.session_name}` "
                f"(or --session {default}), or pick another name for a new project session"
            )
        return path
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return runtime.state_dir / "sessions" / f"{stamp}-{os.getpid()}.json"


def _resumed(name: str, runtime: Runtime) -> Path:
    """``--resume NAME``: the project session NAME, else the default session NAME (``i --runtime sessions``)."""
    from .session import session_path_for_name

    named = session_path_for_name(runtime.workspace, name)
    for path in (named, runtime.state_dir / "sessions" / f"{name}.json"):
        if path.exists():
            return path
    raise ConfigError(
        f"--resume {name}: no session of that name in {named.parent} or {runtime.state_dir / 'sessions'} "
        "(`i --runtime sessions` lists them)"
    )


def _steering_reader(runtime: Runtime, session_file: Path, screen: Screen) -> LineQueue:
    """The console's steering worker added to the runtime (profiles do not remove it, bindings.json
    may replace it), and the reader that queues what is typed while a turn runs."""
    from .console import LineQueue
    from .hooks import HookRunner
    from .selection import with_steering

    queue = session_file.expanduser().absolute().with_name(session_file.name.removesuffix(".json") + ".queue.jsonl")
    runtime.manifest = with_steering(runtime.manifest, runtime.config_dir, queue)
    runtime.hooks = HookRunner(
        runtime.manifest, runtime.pool, {"workspace": runtime.workspace, "workspace_id": runtime.workspace_id}
    )
    return LineQueue(queue, screen)


def _agent(
    args: argparse.Namespace,
    runtime: Runtime,
    config: ApiConfig,
    session_file: Path,
    screen: Screen,
    reader: LineQueue | None,
    events: EventStream | None = None,
) -> Agent:
    """The session opened and the agent over it, its model client observed by the answer writer."""
    from .agent import Agent, AgentOptions
    from .screen import AnswerStream
    from .session import open_session

    runtime.ready()  # a worker that failed to list its tools ends the run before a session is opened
    for problem in runtime.hooks.problems:  # a server left out: said once, the session goes on
        screen.failure(f"i: warning: {problem}")
        if events is not None:
            events.warning(problem)
    session = open_session(
        session_file,
        runtime.workspace,
        runtime.workspace_id,
        private=not (args.session or args.session_name or args.continue_ or getattr(args, "resume", None) is not None),
    )
    if reader is not None:
        reader.path.parent.mkdir(parents=True, exist_ok=True)
    ask: Callable[..., str] | None = None
    preview: Callable[[Any], str | None] | None = None
    offer_save: Callable[[list[str]], bool] | None = None
    if events is None and sys.stdin.isatty() and sys.stderr.isatty():  # stream-json: --yolo / approval.json
        from .approval_prompt import ask_on_tty, change_preview, offer_on_tty

        ask, preview, offer_save = ask_on_tty(screen, reader), change_preview, offer_on_tty(screen, reader)
    out = AnswerStream(None if args.json else screen)

    def notice(line: str) -> None:
        screen.note(f"i: {line}")
        if events is not None:
            events.warning(line)

    options = AgentOptions(
        yolo=args.yolo,
        plan=args.plan,
        ask=ask,
        offer_save=offer_save,
        preview=preview,
        stream=False if args.no_stream else None,
        progress=screen.progress,
        notice=notice,
        out=out if events is None else events,
        events=events.event if events is not None else (screen.activity.event if screen.activity else None),
    )
    agent = Agent(runtime, config, session, options)
    agent.model.observe(out if events is None else events)
    return agent


def _run(
    agent: Agent,
    args: argparse.Namespace,
    screen: Screen,
    reader: LineQueue | None,
    attached: list[dict[str, Any]],
    redactor: Redactor,
    events: EventStream | None = None,
) -> None:
    """The task, the line console or one request per stdin line; then the JSON result or the summary."""
    from .interrupt import stop_interrupted
    from .screen import answer_turn, summary

    session = agent.session
    meter = UsageMeter()
    agent.model.observe(meter)
    answer: str | None = None
    failure: BaseException | None = None
    try:
        if reader is not None and not args.no_logo:
            from .console import logo

            logo(screen)
        agent.start()
        if (args.continue_ or getattr(args, "resume", None) is not None) and not args.quiet:
            screen.note(f"[i] continuing {session.path} ({len(session.messages)} messages)", dim=True)
        if events is not None:
            resumed = getattr(args, "resume", None) is not None
            events.opened(agent, continued=bool(args.continue_ or resumed or args.session or args.session_name))
            for text in [" ".join(args.task)] if args.task else (line.strip() for line in sys.stdin):
                if text:
                    answer = events.turn(agent, text, screen, attached=attached if args.task else ())
        elif args.task:
            answer = answer_turn(agent, " ".join(args.task), screen, show=not args.json, attached=attached)
        elif reader is not None:
            from .console import run_console
            from .prepare import Preparer

            run_console(agent, screen, reader, Preparer(agent))
        else:
            for line in sys.stdin:
                if line.strip():
                    answer_turn(agent, line.strip(), screen)
    except KeyboardInterrupt as exc:
        stop_interrupted(exc)
        failure = exc
        raise
    except BaseException as exc:
        failure = exc
        raise
    finally:
        screen.end_answer()
        agent.close()
        session = agent.session  # the console's /new and /resume may have moved the agent to another
        session.close()
        if args.json:
            _print_json_result(agent, session.path, answer, meter, failure, redactor)
        if not args.quiet:
            summary(agent, session.path, screen)


def _print_json_result(
    agent: Agent,
    path: Path,
    answer: str | None,
    meter: UsageMeter,
    failure: BaseException | None,
    redactor: Redactor,
) -> None:
    """``i "task" --json``: one JSON object on stdout, whatever happened; the answer exactly as the
    model sent it, the error without secrets."""
    import orjson

    from .screen import AnswerStream

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
        "warnings": [redactor.scrub(line) for line in agent.hooks.problems],
        "session": str(path) if path.exists() else None,
    }
    last = agent.options.out.last_reply if isinstance(agent.options.out, AnswerStream) else None
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


# -- i --runtime COMMAND -----------------------------------------------------------------------


def _print_json(value: object) -> None:
    from i_protocol.jsonsafe import dumps_safe

    # A path with undecodable bytes stays lossless (its JSON escape) instead of crashing the print.
    sys.stdout.write(dumps_safe(value, indent=True).decode() + "\n")


def _config_dir() -> Path:
    try:
        return Path(paths_from_env().config_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None


def cmd_init(args: argparse.Namespace) -> int:
    """Create config.json, plugins.json, bindings.json, builtin.json where missing.

    A new config.json gets ``budget.context_window`` only when the server says its context size, and
    ``budget.image_tokens`` only where the provider documents a per-image cost.
    """
    from .initialise import run_init

    result = run_init(_config_dir(), base_url=args.base_url, model=args.model)
    for path, created in result.files:
        print(for_terminal(f"{'created' if created else 'kept   '} {path}"))
    # What init decided and why is a diagnostic: stderr, so stdout stays the list of files.
    for note in (result.context_note, result.image_note, result.exact_note, result.profile_note):
        if note is not None:
            print(for_terminal(f"i: {note}"), file=sys.stderr)
    for line in result.unchanged:  # asked for, not done: the edit is the user's to make
        print(for_terminal(f"i: {line}"), file=sys.stderr)
    return EXIT_CONFIG if result.unchanged else 0


def cmd_manifest(args: argparse.Namespace) -> int:
    """Print the manifest of a profile with absolute paths and bindings applied."""
    from .selection import generate_manifest

    config_dir = _config_dir()
    try:
        config_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{config_dir}: cannot create the config folder: {os_problem(exc)}") from None
    _print_json(generate_manifest(args.profile, config_dir))
    return 0


def _workspace(folder: str) -> tuple[Paths, str, str]:
    """(paths, canonical workspace, workspace id) of ``folder``; a bad folder is a ConfigError."""
    from i_protocol.workspace import canonical_workspace, workspace_id_for

    try:
        paths = paths_from_env()
        workspace = canonical_workspace(folder)
        return paths, workspace, workspace_id_for(workspace, paths.data_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None


def cmd_paths(args: argparse.Namespace) -> int:
    """Print the resolved directories, the workspace and its id."""
    from i_protocol.workspace import workspace_state_dir

    from .system_prompt import instruction_files

    paths, workspace, workspace_id = _workspace(args.C)
    _print_json(
        {
            **paths.as_dict(),
            "workspace": workspace,
            "workspace_id": workspace_id,
            "state_dir": str(workspace_state_dir(workspace_id, paths.data_dir)),
            # What a new session reads into its system prompt (AGENTS.md, else CLAUDE.md, per folder).
            "instructions": [str(path) for path in instruction_files(workspace)],
        }
    )
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    """Run the hook chain of one event on JSON data from stdin and print the result."""
    from .runtime import Runtime

    raw = sys.stdin.buffer.read()
    try:
        from i_protocol.jsonsafe import loads_safe

        data = loads_safe(raw) if raw.strip() else {}
    except ValueError as exc:  # orjson's and json's decode errors are both ValueErrors
        raise ConfigError(f"stdin is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("stdin must hold a JSON object (the event's data)")
    manifest = Path(args.manifest) if args.manifest else None
    with Runtime(args.C, manifest_path=manifest) as runtime:
        _print_json(runtime.hooks.run(args.event, data))
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    """Compact a saved session now (the console's /compact), whatever the budget says."""
    from .agent import Agent, AgentOptions
    from .compaction import describe
    from .runtime import Runtime
    from .selection import check_protocol
    from .session import open_session, session_path_for_name
    from .settings import load_api_config

    paths = paths_from_env()
    config = load_api_config(Path(args.config) if args.config else Path(paths.config_dir) / "config.json")
    runtime = Runtime(args.C, io_limit_bytes=config.io_limit_bytes, paths=paths)
    check_protocol(config, runtime.manifest)  # before any worker starts
    with runtime:
        path = Path(args.session) if args.session else session_path_for_name(runtime.workspace, args.session_name)
        if not path.exists():
            raise ConfigError(f"{path}: no such session")
        session = open_session(path, runtime.workspace, runtime.workspace_id)
        agent = Agent(runtime, config, session, AgentOptions())
        try:
            agent.start()
            if not runtime.hooks.has("compact_plan"):
                raise ConfigError("no compactor is installed: enable the compact module in plugins.json")
            outcome = agent.compact(agent.history, force=True)
        finally:
            agent.close()
            session.close()
    print(for_terminal(describe(outcome)))
    return 0 if outcome.committed else 1


def cmd_undo(args: argparse.Namespace) -> int:
    """Undo a turn of a saved session: show what will be restored, ask, restore, cut the conversation."""
    from i_protocol.workspace import workspace_state_dir

    from .checkpoints import Checkpoints
    from .runtime import Runtime
    from .session import latest_session, open_session, session_path_for_name
    from .undo import apply_undo, describe, plan_undo

    paths = paths_from_env()
    with Runtime(args.C, paths=paths) as runtime:
        if args.session is None:
            state_dir = workspace_state_dir(runtime.workspace_id, paths.data_dir)
            path = latest_session(runtime.workspace, runtime.workspace_id, state_dir)
            if path is None:
                raise ConfigError(f"no session of {runtime.workspace} to undo a turn of")
        elif os.sep in args.session or args.session.endswith(".json"):
            path = Path(args.session)
        else:
            path = session_path_for_name(runtime.workspace, args.session)
        if not path.exists():
            raise ConfigError(f"{path}: no such session")
        session = open_session(path, runtime.workspace, runtime.workspace_id)
        try:
            checkpoints = Checkpoints(runtime.hooks, session, runtime.workspace)
            history = checkpoints.load()
            plan = plan_undo(runtime.hooks, session, history, args.turn)
            for line in describe(plan.answer, done=False):
                print(for_terminal(line))
            if args.dry_run:
                return 0
            if not args.yes and not _confirmed(f"undo turn {plan.turn}?"):
                print("i: nothing was changed", file=sys.stderr)
                return 1
            answer, _kept = apply_undo(runtime.hooks, checkpoints, history, plan)
            for line in describe(answer, done=True):
                print(for_terminal(line))
        finally:
            session.close()
    return 0


def _confirmed(question: str) -> bool:
    """A yes from the terminal (no terminal: no)."""
    if not sys.stdin.isatty():
        print(f"i: {question} needs a yes: run it on a terminal, or add --yes", file=sys.stderr)
        return False
    sys.stderr.write(f"[i] {question} [y/N]: ")
    sys.stderr.flush()
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_sessions(args: argparse.Namespace) -> int:
    """List the project's sessions, the most recently saved first (what ``i --continue`` would take)."""
    import time

    from i_protocol.workspace import workspace_state_dir

    from .session import session_files, session_folders, session_info

    paths, workspace, workspace_id = _workspace(args.C)
    state_dir = workspace_state_dir(workspace_id, paths.data_dir)
    infos = [
        session_info(path, workspace, workspace_id) for path in session_files(session_folders(workspace, state_dir))
    ]
    if args.json:
        _print_json(
            [
                {
                    "name": i.name,
                    "path": str(i.path),
                    "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(i.updated)),
                    "messages": i.messages,
                    "bytes": i.size,
                    "compactions": i.compactions,
                    "precompact_backup": i.precompact,
                    "problem": i.problem,
                    "title": i.title,
                }
                for i in infos
            ]
        )
        return 0
    if not infos:
        folders = ", ".join(map(str, session_folders(workspace, state_dir)))
        print(for_terminal(f"no sessions in {workspace} (looked in {folders})"))
        return 0
    rows = [("NAME", "LAST ACTIVITY", "MESSAGES", "SIZE", "COMPACTIONS", "TITLE", "")]
    for info in infos:
        compactions = str(info.compactions) + (" +backup" if info.precompact else "")
        where = "named" if info.path.parent == session_folders(workspace, state_dir)[0] else "default"
        note = f"({info.problem})" if info.problem else where
        rows.append(
            (
                info.name,
                time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated)),
                str(info.messages) if info.problem is None else "-",
                _size(info.size),
                compactions if info.problem is None else "-",
                info.title or "-",
                note,
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(6)]
    for row in rows:
        # Session names and titles are outside text: shown, never obeyed by the terminal.
        print(for_terminal("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:6])) + "  " + row[6]))
    return 0


def _size(size: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if size < 1024 or unit == "MiB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)


def cmd_cache_report(args: argparse.Namespace) -> int:
    """Run the cache module's report for a project (``<i-cache> report ...``)."""
    import subprocess

    from .executables import module_exec
    from .plugins import load_bindings
    from .pool import worker_environment

    paths = paths_from_env()
    where = module_exec("cache", load_bindings(Path(paths.config_dir)), Path(paths.config_dir))
    argv = [*where["exec"], "report", "-C", str(Path(args.C).resolve())]
    if args.config:
        argv += ["--config", str(Path(args.config).resolve())]
    if args.json:
        argv.append("--json")
    return subprocess.run(argv, env=worker_environment(paths), cwd=where.get("cwd")).returncode


def cmd_check(args: argparse.Namespace) -> int:
    """Run the contract suite against an implementation of a module (``i_core.check``); without a
    module, check every selected module's configuration (``i_core.config_checks``)."""
    if args.module is None:
        if args.exec is not None or args.cwd is not None:
            raise ConfigError("check: --exec and --cwd need the MODULE to check")
        from .config_checks import run_command as check_configs

        return check_configs(json=args.json)
    from .check import run_command

    return run_command(args.module, exec_argv=args.exec, cwd=args.cwd, json=args.json)


def cmd_versions(args: argparse.Namespace) -> int:
    """Show every module's program, package, version and protocol (``i_core.versions``)."""
    from .versions import run_command

    return run_command(json=args.json)


def cmd_logo(args: argparse.Namespace) -> int:
    """Print the brand's glyph: ANSI colour, ``--plain`` (no escapes), ``--ascii``, or ``--svg``."""
    from .brand import can_draw_blocks, render_svg, render_text

    if args.svg:
        sys.stdout.write(render_svg())
        return 0
    color = not args.plain and "NO_COLOR" not in os.environ
    sys.stdout.write(render_text(color=color, ascii_only=args.ascii or not can_draw_blocks(sys.stdout)))
    return 0
