"""The `i` command line: it parses the arguments and calls ``app`` (the agent's run, or a runtime
command), and turns whatever ends the command into its exit code.

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

from . import app, preflight
from .__about__ import NEEDS_PROTOCOL, __version__
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, describe_failure
from .modules import PROFILES
from .redaction import Redactor
from .terminal_text import for_terminal


def agent_parser() -> argparse.ArgumentParser:
    """The arguments of ``i [task]``: the agent's run (``app.run_agent``)."""
    parser = argparse.ArgumentParser(
        prog="i",
        description="i: an agent runtime for the terminal.",
        epilog="Runtime commands: i --runtime "
        "{init,manifest,paths,hook,compact,undo,sessions,cache-report,check,versions,worker,logo} --help",
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
    group.add_argument(
        "--resume",
        nargs="?",
        const="",
        metavar="NAME",
        help="continue the session NAME (a project session, else a default one; `i --runtime sessions` "
        "lists them); without NAME, like --continue",
    )
    parser.add_argument(
        "--yolo",
        "--dangerously-skip-permissions",
        dest="yolo",
        action="store_true",
        help="run every tool without asking (the approval policy can still deny)",
    )
    parser.add_argument(
        "--plan",
        action="store_true",
        help="plan mode: read and search only (write, edit and shell are refused); /act leaves it",
    )
    parser.add_argument("--no-stream", action="store_true", help="wait for whole replies instead of streaming")
    parser.add_argument("--quiet", action="store_true", help="no progress, tool activity or summary on stderr")
    parser.add_argument("--no-logo", action="store_true", help="no logo when the console opens on a terminal")
    parser.add_argument(
        "--json",
        action="store_true",
        help="with a task: print one JSON object (answer, usage, tool calls, session, exit) on stdout "
        "(= --output-format json)",
    )
    parser.add_argument(
        "--output-format",
        choices=("text", "json", "stream-json"),
        default="text",
        help="stdout: the answer (text), one JSON object at the end (json, needs a task), or the run's events "
        "one JSON object per line (stream-json, schema i-stream/1; works with a task, stdin lines, --continue)",
    )
    parser.add_argument("--model", metavar="NAME", help="the model for this run (instead of config.json's model)")
    return parser


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
    init.set_defaults(func=app.cmd_init)
    manifest = sub.add_parser("manifest", help="print the manifest of a profile, bindings applied")
    manifest.add_argument("profile", choices=list(PROFILES), metavar="PROFILE", help=", ".join(PROFILES))
    manifest.set_defaults(func=app.cmd_manifest)
    paths = sub.add_parser("paths", help="print resolved directories and the workspace id")
    paths.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    paths.set_defaults(func=app.cmd_paths)
    hook = sub.add_parser("hook", help="run one event's hook chain on JSON data read from stdin")
    hook.add_argument("event", help="the lifecycle event, e.g. before_turn")
    hook.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    hook.add_argument("--manifest", metavar="FILE", help="a manifest file (default: config_dir/builtin.json)")
    hook.set_defaults(func=app.cmd_hook)
    compact = sub.add_parser("compact", help="compact a saved session now")
    compact.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    compact.add_argument("--config", metavar="FILE", help="API config file (default: config_dir/config.json)")
    which = compact.add_mutually_exclusive_group(required=True)
    which.add_argument("--session", metavar="FILE")
    which.add_argument("--session-name", metavar="NAME")
    compact.set_defaults(func=app.cmd_compact)
    undo = sub.add_parser(
        "undo", help="undo a turn of a session: its files (checkpoint module) and the conversation after it"
    )
    undo.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    undo.add_argument("--session", metavar="FILE|NAME", help="the session (default: the most recent one)")
    undo.add_argument(
        "--turn", type=int, metavar="N", help="the turn to undo, with every later one (default: the last)"
    )
    undo.add_argument("--dry-run", action="store_true", help="only show what would be restored")
    undo.add_argument("--yes", action="store_true", help="do not ask (a file changed since is still kept)")
    undo.set_defaults(func=app.cmd_undo)
    sessions = sub.add_parser(
        "sessions", help="list the project's sessions, most recent first (i --continue takes the first)"
    )
    sessions.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    sessions.add_argument("--json", action="store_true", help="machine-readable output")
    sessions.set_defaults(func=app.cmd_sessions)
    report = sub.add_parser("cache-report", help="prompt-cache hit ratio of a project (from the cache module's stats)")
    report.add_argument("-C", default=".", metavar="PROJECT", help="the project folder (default: .)")
    report.add_argument("--config", metavar="FILE", help="cache.json to use (default: config_dir/cache.json)")
    report.add_argument("--json", action="store_true", help="machine-readable output")
    report.set_defaults(func=app.cmd_cache_report)
    check = sub.add_parser("check", help="MODULE: run its contract suite; no MODULE: check every selected config")
    check.add_argument("module", metavar="MODULE", nargs="?", help="the module, e.g. compact")
    check.add_argument("--cwd", metavar="DIR", help="the worker's folder (default: the current one with --exec)")
    check.add_argument("--json", action="store_true", help="machine-readable output")
    check.add_argument(
        "--exec",
        nargs=argparse.REMAINDER,
        metavar="ARGV",
        help="the program to check instead (last option: the rest is its argv)",
    )
    check.set_defaults(func=app.cmd_check)
    versions = sub.add_parser("versions", help="every module's program, package, version and protocol")
    versions.add_argument("--json", action="store_true", help="machine-readable output")
    versions.set_defaults(func=app.cmd_versions)
    logo = sub.add_parser("logo", help="print the logo (ANSI colour; NO_COLOR turns colour off)")
    logo.add_argument("--plain", action="store_true", help="no colour, no escape sequences")
    logo.add_argument("--ascii", action="store_true", help="ASCII characters only")
    logo.add_argument("--svg", action="store_true", help="an SVG document instead")
    logo.set_defaults(func=app.cmd_logo)
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
            preflight.answer_version("i-core", __version__, NEEDS_PROTOCOL, preflight.__file__, argv)
            return 0
        if argv[:1] == ["--runtime"]:
            args = _runtime_parser().parse_args(argv[1:])
            return int(args.func(args))
        parser = agent_parser()
        args = parser.parse_args(argv)
        if args.json:
            args.output_format = "json"
        args.json = args.output_format == "json"
        if args.json and not args.task:
            parser.error('--json needs a task: i "task" --json')
        return app.run_agent(args, redactor)
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
