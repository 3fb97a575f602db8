"""``i --runtime versions``: which program, package and version each module of the configured
manifest runs, the protocol it speaks, the i-protocol library and build it runs on, and a verdict
— without starting a session.

A module is ``bound`` (bindings.json), ``bundled`` (in this core), ``installed`` (its console
script found next to the interpreter or on PATH) or ``missing``. Bound and installed programs are
asked ``PROGRAM --version`` (a worker answers ``"<dist> <version> (i-protocol <N>)"``, and ours
a second line ``build <tree>; i-protocol <version> build <tree>; needs i-protocol<range>``) under a
short timeout, all at once, and started once to answer the ``hello`` handshake (SPEC §3.4:
package, version, protocol, library, extensions); bundled ones are read from this core's own version.
Each selected module's config is checked as ``i --runtime check`` does (``i_core.config_checks``).

The verdict, as a session's handshake judges (``i_core.handshake``): ``compatible``;
``incompatible`` when the program stopped because its i-protocol does not fit (its one line, exit
7), declares a protocol this core does not speak (in ``hello`` or ``--version``), or names a
release older than the oldest this core works with (``compatibility.OLDEST_WORKERS``,
docs/compatibility.md); ``unknown`` when the version cannot be read, the module is missing, or the
package is not one of ours (a worker not built on i-protocol). A worker silent to ``hello`` is
judged by its ``--version`` line.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from i_protocol import PROTOCOL_VERSION, CallError, ErrorFrame, ProtocolError, paths_from_env
from i_protocol import __version__ as _LIBRARY_VERSION
from i_protocol.handshake import UNKNOWN, Hello, hello_request, parse_hello
from i_protocol.host import WorkerProcess
from i_protocol.jsonsafe import dumps_safe

from .__about__ import __version__
from .compatibility import OLDEST_WORKERS
from .config_checks import INVALID, ConfigCheck, check_modules
from .config_checks import line as config_line
from .errors import EXIT_CONFIG, EXIT_WORKER, ConfigError
from .executables import core_worker_argv, find_script
from .handshake import CORE_EXTENSIONS, refusal
from .manifest import Exec
from .modules import MODULES
from .plugins import load_bindings, selected_modules
from .pool import worker_environment
from .settings import load_api_config
from .terminal_text import for_terminal
from .version_line import VERSION_TIMEOUT_S, VersionAnswer, ask_version

MAX_LISTING_LINES = 100


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
    library: str | None = None
    """The i-protocol version the program runs on (our workers' second ``--version`` line)."""
    build: str | None = None
    """The program's build: the git tree hash of its ``packages/<pkg>/src`` (12 digits), as installed."""
    library_build: str | None = None
    verdict: str = "unknown"
    """``compatible``, ``incompatible`` or ``unknown`` (see the module's docstring)."""
    handshake: str | None = None
    """``answered`` (the worker answered ``hello``), ``silent`` (data unchanged), or None (not asked)."""
    extensions: list[str] | None = None
    """The extension names the worker declared in ``hello``."""
    servers: list[str] | None = None
    """For ``mcp``: what ``i-mcp --list`` said, a line per MCP server (its state and tools)."""
    config: str | None = None
    """A selected module's config: ``ok``, ``invalid`` or ``not checked`` (``i_core.config_checks``)."""
    config_detail: str | None = None
    """What was checked, the problem (naming the file and the field), or why it was not checked."""


def verdict(
    package: str | None, version: str | None, answer: VersionAnswer | None = None, hello: Hello | None = None
) -> tuple[str, str | None]:
    """(verdict, why) of a module's answers: ``compatible``, ``incompatible`` or ``unknown``."""
    if answer is not None and answer.too_old:
        return "incompatible", None
    if hello is not None and hello.known:
        package, version = hello.package or package, hello.version or version
    protocol = hello.protocol if hello is not None and hello.known else (answer.protocol if answer else None)
    if protocol is not None and protocol != PROTOCOL_VERSION:
        said = Hello(package, version, protocol, known=True)
        return "incompatible", refusal(said, None)
    if package is None or version is None:
        return "unknown", None
    problem = refusal(Hello(package, version), None)
    if problem is not None:
        return "incompatible", f"this core works with {package}>={OLDEST_WORKERS[package]} (docs/compatibility.md)"
    if package == "i-core" or package in OLDEST_WORKERS:
        return "compatible", None
    return "unknown", None


def ask_hello(argv: list[str], cwd: str | None, env: dict[str, str]) -> Hello | None:
    """Start ``argv`` once and send it ``hello``: what it said (``UNKNOWN`` when silent), None when it
    could not be asked (it did not start or answer; ``--version`` says why)."""
    sent = hello_request("i-core", __version__, CORE_EXTENSIONS)
    try:
        worker = WorkerProcess.spawn(argv, cwd=cwd, env=env, name=os.path.basename(argv[0]))
    except (CallError, OSError):
        return None
    try:
        return parse_hello(worker.call("hello", sent, timeout=VERSION_TIMEOUT_S), sent)
    except ErrorFrame:
        return UNKNOWN
    except CallError:
        return None
    finally:
        worker.close(grace=0.5)


def module_versions(config_dir: Path) -> list[ModuleVersion]:
    """Every module, the selected ones first, with what would run for it."""
    bindings = load_bindings(config_dir)
    selected = selected_modules(config_dir)
    names = sorted(MODULES, key=lambda m: (m not in selected, m))
    env = worker_environment(paths_from_env())
    with ThreadPoolExecutor(max_workers=8) as pool:
        rows = list(pool.map(lambda m: _row(m, m in selected, bindings, env), names))
    checks = {c.module: c for c in check_modules(config_dir, [r.module for r in rows if r.selected])}
    rows = [replace(r, config=c.status, config_detail=c.detail) if (c := checks.get(r.module)) else r for r in rows]
    configured = _configured_provider(config_dir)
    if configured is not None:  # config.json's provider wins over a bindings.json one (selection.bound_provider)
        provider = {"provider": {"exec": list(configured.argv), "cwd": configured.cwd}}
        rows.append(_row("provider", True, provider, env))
    elif "provider" in bindings:
        rows.append(_row("provider", True, bindings, env))
    return rows


def _configured_provider(config_dir: Path) -> Exec | None:
    """config.json's provider worker, when the file names one (an unreadable config names none here:
    the run itself reports it)."""
    try:
        return load_api_config(config_dir / "config.json").provider
    except (ConfigError, OSError):
        return None


def _row(module: str, selected: bool, bindings: dict[str, dict[str, Any]], env: dict[str, str]) -> ModuleVersion:
    row = _program_row(module, selected, bindings, env)
    if module != "mcp" or not selected or row.exec is None or row.status == "missing" or row.problem:
        return row
    cwd = bindings[module].get("cwd") if module in bindings else None
    return replace(row, servers=ask_listing(row.exec, cwd, env))


def ask_listing(argv: list[str], cwd: str | None, env: dict[str, str]) -> list[str]:
    """What ``PROGRAM --list`` says (i-mcp: each MCP server's state and tools, nothing started), at most
    ``MAX_LISTING_LINES`` lines; one line saying why when it did not answer."""
    try:
        done = subprocess.run(
            [*argv, "--list"],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return [f"--list did not answer within {VERSION_TIMEOUT_S:g} s"]
    except OSError as exc:
        return [f"--list: cannot run: {exc.strerror or exc}"]
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return [f"--list failed: {last[:300]}"]
    return [line[:300] for line in done.stdout.strip().splitlines()[:MAX_LISTING_LINES]]


def _program_row(
    module: str, selected: bool, bindings: dict[str, dict[str, Any]], env: dict[str, str]
) -> ModuleVersion:
    if module in bindings:
        argv, cwd = list(bindings[module]["exec"]), bindings[module].get("cwd")
        return _asked(module, selected, "bound", argv, None, _both(argv, cwd, env))
    spec = MODULES[module]
    if spec.bundled:
        return ModuleVersion(
            module,
            selected,
            "bundled",
            core_worker_argv(module),
            "i-core",
            __version__,
            PROTOCOL_VERSION,
            library=_LIBRARY_VERSION,
            verdict="compatible",
        )
    assert spec.script is not None
    found = find_script(spec.script)
    if found is None:
        return ModuleVersion(
            module, selected, "missing", None, spec.package, None, None, f"run `pipx install {spec.package}`"
        )
    return _asked(module, selected, "installed", [found], spec.package, _both([found], None, env))


def _both(argv: list[str], cwd: str | None, env: dict[str, str]) -> tuple[VersionAnswer, Hello | None]:
    """``--version`` and ``hello``; a program that stopped on its i-protocol is not started again."""
    answer = ask_version(argv, cwd)
    return answer, None if answer.too_old else ask_hello(argv, cwd, env)


def _asked(
    module: str,
    selected: bool,
    status: str,
    argv: list[str],
    package: str | None,
    answers: tuple[VersionAnswer, Hello | None],
) -> ModuleVersion:
    answer, hello = answers
    judged, why = verdict(answer.package, answer.version, answer, hello)
    known = hello is not None and hello.known
    return ModuleVersion(
        module,
        selected,
        status,
        argv,
        (hello.package if known and hello else None) or answer.package or package,
        (hello.version if known and hello else None) or answer.version,
        (hello.protocol if known and hello else None) or answer.protocol,
        answer.problem or why,
        (hello.library if known and hello else None) or answer.library,
        answer.build,
        answer.library_build,
        judged,
        None if hello is None else "answered" if hello.known else "silent",
        sorted(hello.extensions) if known and hello else None,
    )


def run_command(*, json: bool) -> int:
    """Print the table (or JSON); exit 0 unless a selected module is missing, unreadable or incompatible (6)."""
    try:
        config_dir = Path(paths_from_env().config_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None
    rows = module_versions(config_dir)
    core = {
        "package": "i-core",
        "version": __version__,
        "protocol": PROTOCOL_VERSION,
        "python": sys.executable,
        "library": _LIBRARY_VERSION,
    }
    if json:
        document = {
            "core": core,
            "config_dir": str(config_dir),
            "modules": [asdict(r) for r in rows],
        }
        sys.stdout.write(dumps_safe(document, indent=True).decode() + "\n")
    else:
        core_line = f"i-core {__version__} (i-protocol {PROTOCOL_VERSION}) on i-protocol {_LIBRARY_VERSION}"
        print(for_terminal(f"{core_line}; config {config_dir}"))
        table = [("MODULE", "SELECTED", "STATUS", "PACKAGE", "VERSION", "PROTOCOL", "LIBRARY", "VERDICT", "EXEC")]
        for r in rows:
            where = " ".join(r.exec) if r.exec else "-"
            library = f"{r.library} ({r.library_build})" if r.library and r.library_build else r.library
            table.append(
                (
                    r.module,
                    "yes" if r.selected else "no",
                    r.status,
                    r.package or "-",
                    r.version or "-",
                    r.protocol or "-",
                    library or "-",
                    r.verdict,
                    where + (f"  ({r.problem})" if r.problem else ""),
                )
            )
        widths = [max(len(line[c]) for line in table) for c in range(8)]
        for line in table:
            # Versions and problems are what the workers answered: shown, never obeyed.
            print(for_terminal("  ".join(cell.ljust(widths[c]) for c, cell in enumerate(line[:8])) + "  " + line[8]))
        for r in rows:
            if r.servers:  # what i-mcp --list said: shown through the sanitiser, never obeyed
                print(for_terminal(f"{r.module} servers ({r.servers[0]}):"))
                for server in r.servers[1:]:
                    print(for_terminal(f"  {server}"))
        for r in rows:
            if r.config is not None:
                print(config_line(ConfigCheck(r.module, r.config, r.config_detail or "")))
    broken = [r for r in rows if r.selected and (r.status == "missing" or r.problem or r.verdict == "incompatible")]
    if broken:
        return EXIT_WORKER
    return EXIT_CONFIG if any(r.config == INVALID for r in rows) else 0
