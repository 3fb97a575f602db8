"""The `i` command line: runtime commands and (see agent) the console.

Every failure ends as one ``i: ...`` line on stderr and a documented exit code (see errors.py):
expected failures (CoreError) with their own code, i-protocol's with 3, an ordinary OS error
(a path that is missing, not a folder, not permitted) with 3 naming the path, a hook's invalid
history with 6, and anything else with 1 and "(this is a bug: please report it)". ``I_DEBUG=1``
adds the traceback. Both are shown sanitised (``terminal_text``) and without secrets
(``redaction``: the configured API key's value and what the secret table flags).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from pathlib import Path

from i_protocol import Paths, ProtocolError, paths_from_env

from .__about__ import __version__
from .errors import (
    EXIT_CONFIG,
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_PROTOCOL,
    EXIT_USAGE,
    EXIT_WORKER,
    ConfigError,
    CoreError,
    os_problem,
)
from .modules import PROFILES
from .redaction import Redactor
from .terminal_text import for_terminal


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
    if result.context_note is not None:
        print(for_terminal(result.context_note))
    if result.image_note is not None:
        print(for_terminal(result.image_note))
    if result.exact_note is not None:
        print(for_terminal(result.exact_note))
    if result.profile_note is not None:
        print(for_terminal(result.profile_note))
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

    paths, workspace, workspace_id = _workspace(args.C)
    _print_json(
        {
            **paths.as_dict(),
            "workspace": workspace,
            "workspace_id": workspace_id,
            "state_dir": str(workspace_state_dir(workspace_id, paths.data_dir)),
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
    from .config import load_api_config
    from .runtime import Runtime
    from .selection import check_protocol
    from .session import open_session, session_path_for_name

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
                }
                for i in infos
            ]
        )
        return 0
    if not infos:
        folders = ", ".join(map(str, session_folders(workspace, state_dir)))
        print(for_terminal(f"no sessions in {workspace} (looked in {folders})"))
        return 0
    rows = [("NAME", "LAST ACTIVITY", "MESSAGES", "SIZE", "COMPACTIONS", "")]
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
                note,
            )
        )
    widths = [max(len(row[c]) for row in rows) for c in range(5)]
    for row in rows:
        # Session names are file names: shown, never obeyed by the terminal.
        print(for_terminal("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(row[:5])) + "  " + row[5]))
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
    """Run the contract suite against an implementation of a module (``i_core.check``)."""
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


def _runtime_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="i --runtime", description="Runtime commands of i.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    init = sub.add_parser("init", help="create the default configuration files (never overwrites)")
    init.add_argument(
        "--base-url",
        metavar="URL",
        help="the model server's API root for config.json (default: http://127.0.0.1:8080/v1); "
        "init asks it once for its context size",
    )
    init.add_argument("--model", metavar="NAME", help="the model name for config.json (default: gpt-4o-mini)")
    init.set_defaults(func=cmd_init)
    manifest = sub.add_parser("manifest", help="print the manifest of a profile, bindings applied")
    manifest.add_argument("profile", choices=list(PROFILES), metavar="PROFILE", help=", ".join(PROFILES))
    manifest.set_defaults(func=cmd_manifest)
    paths = sub.add_parser("paths", help="print resolved directories and the workspace id")
    paths.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    paths.set_defaults(func=cmd_paths)
    hook = sub.add_parser("hook", help="run one event's hook chain on JSON data read from stdin")
    hook.add_argument("event", help="the lifecycle event, e.g. before_turn")
    hook.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    hook.add_argument("--manifest", metavar="FILE", help="a manifest file (default: config_dir/builtin.json)")
    hook.set_defaults(func=cmd_hook)
    compact = sub.add_parser("compact", help="compact a saved session now")
    compact.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    compact.add_argument("--config", metavar="FILE", help="API config file (default: config_dir/config.json)")
    which = compact.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", metavar="FILE")
    which.add_argument("--session-name", metavar="NAME")
    compact.set_defaults(func=cmd_compact)
    sessions = sub.add_parser(
        "sessions", help="list the project's sessions, most recent first (i --continue takes the first)"
    )
    sessions.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    sessions.add_argument("--json", action="store_true", help="machine-readable output")
    sessions.set_defaults(func=cmd_sessions)
    report = sub.add_parser("cache-report", help="prompt-cache hit ratio of a project (from the cache module's stats)")
    report.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    report.add_argument("--config", metavar="FILE", help="cache.json to use (default: config_dir/cache.json)")
    report.add_argument("--json", action="store_true", help="machine-readable output")
    report.set_defaults(func=cmd_cache_report)
    check = sub.add_parser("check", help="run the contract suite against a module's implementation (exit 0: all pass)")
    check.add_argument("module", metavar="MODULE", help="the module, e.g. compact")
    check.add_argument("--cwd", metavar="DIR", help="the worker's folder (default: the current one with --exec)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.add_argument(
        "--exec",
        nargs=argparse.REMAINDER,
        metavar="ARGV",
        help="the program to check instead (last option: the rest is its argv)",
    )
    check.set_defaults(func=cmd_check)
    versions = sub.add_parser("versions", help="every module's program, package, version and protocol")
    versions.add_argument("--json", action="store_true", help="machine-readable output")
    versions.set_defaults(func=cmd_versions)
    logo = sub.add_parser("logo", help="print the logo (ANSI colour; NO_COLOR turns colour off)")
    logo.add_argument("--plain", action="store_true", help="no colour, no escape sequences")
    logo.add_argument("--ascii", action="store_true", help="ASCII characters only")
    logo.add_argument("--svg", action="store_true", help="an SVG document instead")
    logo.set_defaults(func=cmd_logo)
    sub.add_parser(
        "worker",
        help="run a worker bundled in the core (approval, prompts, skills, steering, responses, smoke), "
        "or several in one process: approval,prompts,skills",
    )
    return parser


def run_cli(argv: list[str]) -> int:
    """Parse ``argv`` and run the selected command; every failure prints one clear line."""
    redactor = Redactor()
    try:
        if argv[:1] == ["--version"]:
            from . import preflight
            from .__about__ import NEEDS_PROTOCOL

            preflight.answer_version("i-core", __version__, NEEDS_PROTOCOL, preflight.__file__, argv)
            return 0
        if argv[:1] == ["--runtime"]:
            args = _runtime_parser().parse_args(argv[1:])
            return int(args.func(args))
        from .console import run_console

        return run_console(argv, redactor)
    except KeyboardInterrupt:
        print("i: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # argparse usage errors (2), --help (0), SIGTERM (143)
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    except Exception as exc:  # the last line of defence: one line, never a traceback
        message, code = describe_failure(exc)
        _diagnostic(f"i: {message}", redactor)
        if os.environ.get("I_DEBUG") == "1":
            _diagnostic("".join(traceback.format_exception(exc)).rstrip("\n"), redactor)
        return code


def _diagnostic(text: str, redactor: Redactor) -> None:
    """A failure on stderr: secrets scrubbed, control characters shown, never obeyed."""
    print(for_terminal(redactor.scrub(text)), file=sys.stderr)


def describe_failure(exc: BaseException) -> tuple[str, int]:
    """The one line (without ``i: ``) and the exit code of a failure that ended a command."""
    from i_protocol.history import HistoryError

    if isinstance(exc, HistoryError):
        # The core builds valid histories; an invalid one came from a hook (before_save, after_tool, ...).
        return (
            f"a hook returned an invalid history: {_one_line(exc)} (nothing was saved: the last checkpoint "
            "is unchanged)",
            EXIT_WORKER,
        )
    if isinstance(exc, ImportError):
        # The console script checked the version, so an i_protocol import failing means another build.
        from . import preflight
        from .__about__ import NEEDS_PROTOCOL

        problem = preflight.another_build("i-core", __version__, NEEDS_PROTOCOL, exc)
        if problem is not None:
            return problem, EXIT_PROTOCOL
    if isinstance(exc, CoreError) and exc.exit_code != EXIT_FAILURE:
        return str(exc), exc.exit_code
    if isinstance(exc, ProtocolError):
        return str(exc), EXIT_CONFIG
    if isinstance(exc, OSError):
        return os_problem(exc), EXIT_CONFIG
    detail = f"{type(exc).__name__}: {_one_line(exc)}" if str(exc) else type(exc).__name__
    return f"unexpected error: {detail} (this is a bug: please report it); I_DEBUG=1 shows the traceback", EXIT_FAILURE


def _one_line(exc: BaseException, limit: int = 1000) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
