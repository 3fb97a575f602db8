"""The `i` command line: runtime commands and (see agent) the console."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import orjson

from i_protocol import PROTOCOL_VERSION, ProtocolError, paths_from_env

from .__about__ import __version__
from .errors import EXIT_INTERRUPTED, EXIT_USAGE, ConfigError, CoreError
from .modules import PROFILES


def version_line() -> str:
    """What `i --version` prints."""
    return f"i-core {__version__} (i-protocol {PROTOCOL_VERSION})"


def _print_json(value: object) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")


def _config_dir() -> Path:
    try:
        return Path(paths_from_env().config_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None


def cmd_init(args: argparse.Namespace) -> int:
    """Create config.json, plugins.json, bindings.json, builtin.json where missing."""
    from .initialise import initialise

    for path, created in initialise(_config_dir()):
        print(f"{'created' if created else 'kept   '} {path}")
    return 0


def cmd_manifest(args: argparse.Namespace) -> int:
    """Print the manifest of a profile with absolute paths and bindings applied."""
    from .selection import generate_manifest

    config_dir = _config_dir()
    config_dir.mkdir(parents=True, exist_ok=True)
    _print_json(generate_manifest(args.profile, config_dir))
    return 0


def cmd_paths(args: argparse.Namespace) -> int:
    """Print the resolved directories, the workspace and its id."""
    from i_protocol.workspace import canonical_workspace, workspace_id_for, workspace_state_dir

    try:
        paths = paths_from_env()
        workspace = canonical_workspace(args.C)
        workspace_id = workspace_id_for(workspace, paths.data_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None
    _print_json({
        **paths.as_dict(),
        "workspace": workspace,
        "workspace_id": workspace_id,
        "state_dir": str(workspace_state_dir(workspace_id, paths.data_dir)),
    })
    return 0


def cmd_hook(args: argparse.Namespace) -> int:
    """Run the hook chain of one event on JSON data from stdin and print the result."""
    from .runtime import Runtime

    raw = sys.stdin.buffer.read()
    try:
        data = orjson.loads(raw) if raw.strip() else {}
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"stdin is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ConfigError("stdin must hold a JSON object (the event's data)")
    manifest = Path(args.manifest) if args.manifest else None
    with Runtime(args.C, manifest_path=manifest) as runtime:
        _print_json(runtime.hooks.run(args.event, data))
    return 0


def _runtime_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="i --runtime", description="Runtime commands of i.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    sub.add_parser("init", help="create the default configuration files (never overwrites)").set_defaults(func=cmd_init)
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
    sub.add_parser("worker", help="run a worker bundled in the core: approval, prompts, skills")
    return parser


def run_cli(argv: list[str]) -> int:
    """Parse ``argv`` and run the selected command; expected failures print one clear line."""
    try:
        if argv[:1] == ["--version"]:
            print(version_line())
            return 0
        if argv[:1] == ["--runtime"]:
            args = _runtime_parser().parse_args(argv[1:])
            return int(args.func(args))
        from .console import run_console

        return run_console(argv)
    except CoreError as exc:
        print(f"i: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("i: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:  # argparse usage errors
        return int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
