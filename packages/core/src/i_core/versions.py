"""``i --runtime versions``: which program, package and version each module of the configured
manifest runs, and the protocol it speaks — without starting a session.

A module is ``bound`` (bindings.json), ``bundled`` (in this core), ``installed`` (its console
script found next to the interpreter or on PATH) or ``missing``. Bound and installed programs are
asked ``PROGRAM --version`` (a worker answers ``"<dist> <version> (i-protocol <N>)"``) under a
short timeout, all at once; bundled ones are read from this core's own version.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from i_protocol import PROTOCOL_VERSION, paths_from_env

from .__about__ import __version__
from .errors import ConfigError
from .executables import core_worker_argv, find_script
from .manifest import Exec
from .modules import CONSOLE_MODULES, MODULES, PROFILES
from .plugins import load_bindings, load_plugins
from .terminal_text import for_terminal

VERSION_TIMEOUT_S = 3.0
_VERSION_LINE = re.compile(r"^(?P<package>\S(?:.*\S)?) (?P<version>\S+) \(i-protocol (?P<protocol>[^)\s]+)\)$")


@dataclass(frozen=True)
class ModuleVersion:
    """One row: a module, whether the configured manifest selects it, and what would run."""

    module: str
    selected: bool
    status: str
    """``bound``, ``bundled``, ``installed`` or ``missing``."""
    exec: list[str] | None
    package: str | None
    version: str | None
    protocol: str | None
    problem: str | None = None


def parse_version_line(line: str) -> tuple[str, str, str] | None:
    """(package, version, protocol) of a worker's ``--version`` line, None when it is not one."""
    match = _VERSION_LINE.match(line.strip())
    return (match["package"], match["version"], match["protocol"]) if match else None


def ask_version(argv: list[str], cwd: str | None = None) -> tuple[str | None, str | None, str | None, str | None]:
    """Run ``argv --version``: (package, version, protocol, problem)."""
    try:
        done = subprocess.run(
            [*argv, "--version"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return None, None, None, f"--version did not answer within {VERSION_TIMEOUT_S:g} s"
    except OSError as exc:
        return None, None, None, f"cannot run: {exc.strerror or exc}"
    line = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    parsed = parse_version_line(line) if done.returncode == 0 else None
    if parsed is None:
        return (
            None,
            None,
            None,
            f"--version answered {line[:80]!r} (exit {done.returncode}), not '<dist> <version> (i-protocol <N>)'",
        )
    return (*parsed, None)


def selected_modules(config_dir: Path) -> set[str]:
    """The modules plugins.json selects (its profile minus ``disabled``) plus the console's own."""
    plugins = load_plugins(config_dir)
    only_with = {m: MODULES[m].only_with for m in PROFILES[plugins["profile"]]}
    return {
        m
        for m, needed in only_with.items()
        if m not in plugins["disabled"] and (needed is None or (config_dir / needed).is_file())
    } | set(CONSOLE_MODULES)


def module_versions(config_dir: Path) -> list[ModuleVersion]:
    """Every module, the selected ones first, with what would run for it."""
    bindings = load_bindings(config_dir)
    selected = selected_modules(config_dir)
    names = sorted(MODULES, key=lambda m: (m not in selected, m))
    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(lambda m: _row(m, m in selected, bindings), names))
    configured = _configured_provider(config_dir)
    if configured is not None:  # config.json's provider wins over a bindings.json one (selection.bound_provider)
        rows.append(_row("provider", True, {"provider": {"exec": list(configured.argv), "cwd": configured.cwd}}))
    elif "provider" in bindings:
        rows.append(_row("provider", True, bindings))
    return rows


def _configured_provider(config_dir: Path) -> Exec | None:
    """config.json's provider worker, when the file names one (an unreadable config names none here:
    the run itself reports it)."""
    from .config import load_api_config

    try:
        return load_api_config(config_dir / "config.json").provider
    except (ConfigError, OSError):
        return None


def _row(module: str, selected: bool, bindings: dict[str, dict[str, Any]]) -> ModuleVersion:
    if module in bindings:
        argv = list(bindings[module]["exec"])
        package, version, protocol, problem = ask_version(argv, bindings[module].get("cwd"))
        return ModuleVersion(module, selected, "bound", argv, package, version, protocol, problem)
    spec = MODULES[module]
    if spec.bundled:
        return ModuleVersion(
            module, selected, "bundled", core_worker_argv(module), "i-core", __version__, PROTOCOL_VERSION
        )
    assert spec.script is not None
    found = find_script(spec.script)
    if found is None:
        return ModuleVersion(
            module, selected, "missing", None, spec.package, None, None, f"run `pipx install {spec.package}`"
        )
    package, version, protocol, problem = ask_version([found])
    return ModuleVersion(module, selected, "installed", [found], package or spec.package, version, protocol, problem)


def run_command(*, json: bool) -> int:
    """Print the table (or JSON); exit 0 unless a selected module is missing or unreadable (6)."""
    from i_protocol import ProtocolError
    from i_protocol.jsonsafe import dumps_safe

    from .errors import EXIT_WORKER

    try:
        config_dir = Path(paths_from_env().config_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None
    rows = module_versions(config_dir)
    core = {"package": "i-core", "version": __version__, "protocol": PROTOCOL_VERSION, "python": sys.executable}
    if json:
        document = {"core": core, "config_dir": str(config_dir), "modules": [asdict(r) for r in rows]}
        sys.stdout.write(dumps_safe(document, indent=True).decode() + "\n")
    else:
        print(for_terminal(f"i-core {__version__} (i-protocol {PROTOCOL_VERSION}); config {config_dir}"))
        table = [("MODULE", "SELECTED", "STATUS", "PACKAGE", "VERSION", "PROTOCOL", "EXEC")]
        for r in rows:
            where = " ".join(r.exec) if r.exec else "-"
            table.append(
                (
                    r.module,
                    "yes" if r.selected else "no",
                    r.status,
                    r.package or "-",
                    r.version or "-",
                    r.protocol or "-",
                    where + (f"  ({r.problem})" if r.problem else ""),
                )
            )
        widths = [max(len(line[c]) for line in table) for c in range(6)]
        for line in table:
            # Versions and problems are what the workers answered: shown, never obeyed.
            print(for_terminal("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(line[:6])) + "  " + line[6]))
    broken = [r for r in rows if r.selected and (r.status == "missing" or r.problem)]
    return EXIT_WORKER if broken else 0
