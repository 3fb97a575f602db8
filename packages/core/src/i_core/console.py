"""The `i` console: ``i "task"`` runs one task; ``i`` on a TTY is a line console; without a TTY,
each line of stdin is one request in the same session.

Exit codes: 0 done, 1 internal error (a bug), 2 usage, 3 configuration, session or a file the run
needs, 4 model/API, 5 budget exhausted, 6 worker failure, 130 interrupted, 143 terminated (see
errors.py; cli.run_cli prints the one line).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from .errors import ConfigError, CoreError

_LOOPBACK = ("127.0.0.1", "localhost", "::1", "[::1]")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="i", description="i: an agent runtime for the terminal.",
        epilog="Runtime commands: i --runtime {init,manifest,paths,hook,compact,cache-report,worker} --help",
    )
    parser.add_argument("task", nargs="*", help="the task; without it, a console (TTY) or one request per stdin line")
    parser.add_argument("-C", dest="workspace", default=".", metavar="DIR", help="the project folder (default: .)")
    parser.add_argument("--config", metavar="FILE", help="API config file (default: config_dir/config.json)")
    parser.add_argument("--manifest", metavar="FILE", help="a hand-written manifest (default: config_dir/builtin.json)")
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--session", metavar="FILE", help="session file to continue or create")
    group.add_argument("--session-name", metavar="NAME", help="session in the project's .i/sessions/NAME.json")
    parser.add_argument("--yolo", "--dangerously-skip-permissions", dest="yolo", action="store_true",
                        help="run every tool without asking (the approval policy can still deny)")
    parser.add_argument("--no-stream", action="store_true", help="wait for whole replies instead of streaming")
    parser.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    return parser


class Progress:
    """A one-line status on stderr while the model thinks or a tool runs; silent when not a TTY."""

    def __init__(self, stream: TextIO, enabled: bool) -> None:
        self.stream = stream
        self.enabled = enabled and stream.isatty()
        self.shown = False

    def __call__(self, message: str) -> None:
        if self.enabled:
            self.stream.write(f"\r\x1b[2K[i] {message}…")
            self.stream.flush()
            self.shown = True

    def clear(self) -> None:
        """Erase the status line."""
        if self.shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self.shown = False


def _ask_on_tty(progress: Progress) -> Callable[[str], bool]:
    def ask(summary: str) -> bool:
        progress.clear()
        sys.stderr.write(f"[i] allow {summary}? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        return answer in ("y", "yes")

    return ask


def _session_path(args: argparse.Namespace, workspace: str, state_dir: Path) -> Path:
    from .session import session_path_for_name

    if args.session:
        return Path(args.session)
    if args.session_name:
        return session_path_for_name(workspace, args.session_name)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    return state_dir / "sessions" / f"{stamp}-{os.getpid()}.json"


def run_console(argv: list[str]) -> int:
    """Run the agent as the command line asks; expected failures raise CoreError."""
    from i_protocol import paths_from_env

    from .agent import Agent, AgentOptions
    from .config import load_api_config
    from .runtime import Runtime
    from .session import open_session

    args = _parser().parse_args(argv)
    paths = paths_from_env()
    config_path = Path(args.config) if args.config else Path(paths.config_dir) / "config.json"
    config = load_api_config(config_path)
    if config.api_key_env and config.api_key() is None:
        from urllib.parse import urlsplit

        if (urlsplit(config.base_url).hostname or "") not in _LOOPBACK:
            raise ConfigError(
                f"{config.source}: the environment variable {config.api_key_env} (api_key_env) is not set")
    manifest = Path(args.manifest) if args.manifest else None
    with Runtime(args.workspace, manifest_path=manifest, io_limit_bytes=config.io_limit_bytes, paths=paths) as runtime:
        session = open_session(_session_path(args, runtime.workspace, runtime.state_dir), runtime.workspace,
                               runtime.workspace_id, private=not (args.session or args.session_name))
        progress = Progress(sys.stderr, not args.quiet)
        interactive = sys.stdin.isatty() and sys.stderr.isatty()
        options = AgentOptions(yolo=args.yolo, ask=_ask_on_tty(progress) if interactive else None,
                               stream=False if args.no_stream else None, progress=progress)
        agent = Agent(runtime, config, session, options)
        try:
            agent.start()
            if args.task:
                _one(agent, " ".join(args.task), progress)
            elif interactive:
                _console(agent, progress)
            else:
                for line in sys.stdin:
                    if line.strip():
                        _one(agent, line.strip(), progress)
        finally:
            progress.clear()
            agent.close()
            session.close()
            if not args.quiet:
                _summary(agent, session.path)
    return 0


def _one(agent: object, text: str, progress: Progress) -> None:
    from .agent import Agent

    assert isinstance(agent, Agent)
    answer = agent.run(text)
    progress.clear()
    if agent.model.stream:
        sys.stdout.write("\n")
    else:
        sys.stdout.write(answer + "\n")
    sys.stdout.flush()


def _console(agent: object, progress: Progress) -> None:
    from .agent import Agent
    from .compaction import describe

    assert isinstance(agent, Agent)
    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    sys.stderr.write("i — type a request; /compact, /exit\n")
    while True:
        try:
            line = input("> ")
        except EOFError:
            sys.stderr.write("\n")
            return
        text = line.strip()
        if not text:
            continue
        if text in ("/exit", "/quit"):
            return
        if text == "/compact":
            try:
                sys.stderr.write(describe(agent.compact(agent.history, force=True)) + "\n")
            except CoreError as exc:
                progress.clear()
                sys.stderr.write(f"i: {exc}\n")
            continue
        try:
            _one(agent, text, progress)
        except CoreError as exc:
            progress.clear()
            sys.stderr.write(f"i: {exc}\n")


def _summary(agent: object, path: Path) -> None:
    from .agent import Agent

    assert isinstance(agent, Agent)
    stats = agent.stats
    tools = ", ".join(sorted(set(stats.tools_used))) or "none"
    line = (f"[i] {stats.model_requests} model request(s), {stats.tool_calls} tool call(s) ({tools}), "
            f"{stats.compactions} compaction(s) of {stats.compact_attempts} attempt(s)")
    if stats.last_failure:
        line += f" (last failed: {stats.last_failure[:200]})"
    if stats.rejections:
        line += f", {stats.rejections} context-length refusal(s) by the server"
    # A run that failed before its first checkpoint has no session file to point at.
    line += f"; session: {path}" if path.exists() else "; no session was saved"
    budget = stats.last_budget
    if budget and isinstance(budget.get("estimate"), int):
        line += f"; budget estimate {budget['estimate']}"
        if isinstance(budget.get("trigger"), int | float):
            line += f" of trigger {int(budget['trigger'])}"
    sys.stderr.write(line + "\n")
