"""Which checks a module gets, what implementation they run against, and running them.

Every run happens in fresh temporary ``I_*_DIR`` directories and a temporary workspace, removed
afterwards, so a check never reads or writes the user's memory, statistics or configuration.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from i_protocol import CallError, Paths, paths_from_env

from ..errors import ConfigError, CoreError
from ..executables import module_exec
from ..manifest import resolve_cwd, resolve_exec
from ..modules import MODULES
from ..plugins import load_bindings
from ..pool import worker_environment
from . import budget, bundled, cache, checkpoint, compact, framing, mcp, memory, web
from .probe import CheckFailed, Run, Site, Target

Check = Callable[[Run], str]

_INVARIANTS: dict[str, tuple[tuple[str, Any], ...]] = {
    "budget": budget.CHECKS_OF_MODULE,
    "compact": compact.CHECKS_OF_MODULE,
    "cache": cache.CHECKS_OF_MODULE,
    "memory": memory.CHECKS_OF_MODULE,
    "checkpoint": checkpoint.CHECKS_OF_MODULE,
    "web": web.CHECKS_OF_MODULE,
    "mcp": mcp.CHECKS_OF_MODULE,
    **bundled.CHECKS_OF_MODULE,
}


@dataclass(frozen=True)
class Result:
    """One check's outcome: pass or fail, and the detail or the reason."""

    name: str
    passed: bool
    detail: str
    seconds: float


def checks_of(module: str) -> tuple[tuple[str, Check], ...]:
    """The framing checks, then the module's own invariants."""
    return (*framing.CHECKS, *_INVARIANTS.get(module, ()))


def resolve_target(module: str, exec_argv: list[str] | None, cwd: str | None, config_dir: Path) -> Target:
    """``--exec ARGV`` (argv[0] resolved like a manifest's), else what a session would run: the
    module's binding in bindings.json, else its installed or bundled implementation."""
    if module not in MODULES:
        raise ConfigError(f"unknown module {module!r}; known modules: {', '.join(sorted(MODULES))}")
    if exec_argv is not None and not exec_argv:
        raise ConfigError("check: --exec needs the program to check (and its arguments) after it")
    if exec_argv:
        final_cwd = resolve_cwd(cwd or os.getcwd(), Path.cwd(), "check")
        return Target(resolve_exec(exec_argv, final_cwd, "check"), final_cwd, "--exec")
    bindings = load_bindings(Path(paths_from_env().config_dir))
    where = module_exec(module, bindings, config_dir)
    source = "bound" if module in bindings else "bundled" if MODULES[module].bundled else "installed"
    final_cwd = resolve_cwd(cwd or where.get("cwd"), config_dir, "check")
    return Target(tuple(where["exec"]), final_cwd, source)


@contextmanager
def temporary_site() -> Iterator[Site]:
    """Fresh I_*_DIR directories and a workspace in one temporary folder, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="i-check-") as root:
        folders = {key: os.path.join(root, key) for key in ("config", "data", "cache", "runtime", "workspace")}
        for folder in folders.values():
            os.mkdir(folder)
        paths = Paths(folders["config"], folders["data"], folders["cache"], folders["runtime"])
        yield Site(paths, os.path.realpath(folders["workspace"]), str(uuid.uuid4()), worker_environment(paths))


def run_checks(
    module: str,
    *,
    exec_argv: list[str] | None = None,
    cwd: str | None = None,
    on_start: Callable[[Target], None] | None = None,
    on_result: Callable[[Result], None] | None = None,
) -> tuple[Target, list[Result]]:
    """Run every check of ``module`` against ``--exec`` or what a session would run (see
    ``resolve_target``); ``on_start`` and ``on_result`` see the target and each result as they come."""
    with temporary_site() as site:
        target = resolve_target(module, exec_argv, cwd, Path(site.paths.config_dir))
        if on_start is not None:
            on_start(target)
        extra = ("--queue", os.path.join(site.paths.runtime_dir, "queue.ndjson")) if module == "steering" else ()
        run = Run(module, target, site, extra)
        results = []
        for name, check in checks_of(module):
            result = _run_one(name, check, run)
            results.append(result)
            if on_result is not None:
                on_result(result)
    return target, results


def _run_one(name: str, check: Check, run: Run) -> Result:
    started = time.monotonic()
    try:
        detail, passed = check(run), True
    except CheckFailed as exc:
        detail, passed = str(exc), False
    except CallError as exc:
        detail, passed = exc.problem, False
    except CoreError as exc:  # a HookResultError ("returned ...") or a refused origin
        detail, passed = f"worker {exc}" if str(exc).startswith(("returned", "answered")) else str(exc), False
    return Result(name, passed, " ".join(detail.split()), time.monotonic() - started)
