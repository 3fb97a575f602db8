"""Every selected module's configuration checked without a session (``i --runtime check``, and the
``CONFIG`` lines of ``i --runtime versions``).

The core checks its own config.json; each selected worker program is asked ``PROGRAM --check-config``
(the documented mode of ``i_protocol.Worker``: ``config ok: ...`` and exit 0, or ``config invalid:
<file>: <field> ...`` and exit 3), with the environment, cwd and argv a session would give it, all at
once under a short timeout. A program that answers anything else (a third party's, or one of ours
built on an older i-protocol) is ``not checked``, never an error; bundled modules and missing ones
are ``not checked`` too (``versions`` reports a missing one).
"""

from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from i_protocol import ProtocolError, paths_from_env
from i_protocol.jsonsafe import dumps_safe
from i_protocol.worker import CHECK_CONFIG_FLAG, CONFIG_INVALID, CONFIG_OK, EXIT_CONFIG

from .errors import EXIT_CONFIG as CORE_EXIT_CONFIG
from .errors import ConfigError
from .executables import module_exec
from .modules import MODULES
from .plugins import load_bindings, selected_modules
from .pool import worker_environment
from .settings import load_api_config
from .terminal_text import for_terminal
from .version_line import VERSION_TIMEOUT_S

OK = "ok"
INVALID = "invalid"
NOT_CHECKED = "not checked"
MAX_DETAIL_CHARS = 500


@dataclass(frozen=True)
class ConfigCheck:
    """One module's verdict on its configuration: ``ok``, ``invalid`` or ``not checked``, and why."""

    module: str
    status: str
    detail: str


def check_core(config_dir: Path) -> ConfigCheck:
    """The core's own config.json (a missing one is invalid: every run needs it)."""
    path = config_dir / "config.json"
    try:
        load_api_config(path)
    except ConfigError as exc:
        return ConfigCheck("core", INVALID, str(exc))
    return ConfigCheck("core", OK, str(path))


def check_modules(config_dir: Path, modules: list[str]) -> list[ConfigCheck]:
    """Each of ``modules`` (selected ones), in order, checked as its program says."""
    bindings = load_bindings(config_dir)
    env = worker_environment(paths_from_env())
    with ThreadPoolExecutor(max_workers=8) as pool:
        return list(pool.map(lambda module: _check_module(module, bindings, config_dir, env), modules))


def _check_module(
    module: str, bindings: dict[str, dict[str, Any]], config_dir: Path, env: dict[str, str]
) -> ConfigCheck:
    if module not in bindings and MODULES[module].bundled:
        return ConfigCheck(module, NOT_CHECKED, "bundled in i-core")
    try:
        where = module_exec(module, bindings, config_dir)
    except ConfigError as exc:
        return ConfigCheck(module, NOT_CHECKED, str(exc))
    argv = [*where["exec"], CHECK_CONFIG_FLAG]
    return ask_program(module, argv, where.get("cwd"), env)


def ask_program(module: str, argv: list[str], cwd: str | None, env: dict[str, str]) -> ConfigCheck:
    """Run ``argv`` (ending in ``--check-config``) and read its one line."""
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return ConfigCheck(module, NOT_CHECKED, f"{CHECK_CONFIG_FLAG} did not answer within {VERSION_TIMEOUT_S:g} s")
    except OSError as exc:
        return ConfigCheck(module, NOT_CHECKED, f"cannot run {argv[0]}: {exc.strerror or exc}")
    line = (done.stdout.strip().splitlines() or [""])[-1][:MAX_DETAIL_CHARS]
    if done.returncode == 0 and line.startswith(CONFIG_OK):
        return ConfigCheck(module, OK, line.removeprefix(CONFIG_OK))
    if done.returncode == EXIT_CONFIG and line.startswith(CONFIG_INVALID):
        return ConfigCheck(module, INVALID, line.removeprefix(CONFIG_INVALID))
    return ConfigCheck(module, NOT_CHECKED, f"the program does not support {CHECK_CONFIG_FLAG}")


def line(check: ConfigCheck) -> str:
    """One module's verdict as printed: ``config MODULE: STATUS, DETAIL`` (what a worker said: shown
    through the sanitiser, never obeyed)."""
    return for_terminal(f"config {check.module}: {check.status}, {check.detail}")


def run_command(*, json: bool) -> int:
    """``i --runtime check`` without a module: config.json and every selected module's config; exit 3
    when one is invalid, else 0."""
    try:
        config_dir = Path(paths_from_env().config_dir)
    except ProtocolError as exc:
        raise ConfigError(str(exc)) from None
    checks = [check_core(config_dir), *check_modules(config_dir, sorted(selected_modules(config_dir)))]
    if json:
        document = {"config_dir": str(config_dir), "checks": [asdict(c) for c in checks]}
        print(dumps_safe(document, indent=True).decode())
    else:
        for check in checks:
            print(line(check))
    return CORE_EXIT_CONFIG if any(c.status == INVALID for c in checks) else 0
