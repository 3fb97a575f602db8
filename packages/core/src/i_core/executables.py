"""Where each module's program is: a binding, a script of the core itself, or an installed worker.

The bundled modules a manifest selects run together in one process (``bundle``:
`i --runtime worker approval,prompts,skills`), one interpreter start instead of one each; a
binding still replaces only the module it names. A worker's console script is looked up next to
the running interpreter first (a pipx or venv install of the core with its workers), then on PATH;
the manifest gets its absolute path. A selected module that is not installed is an error naming
the package to install.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .modules import MODULES


def core_worker_argv(name: str) -> list[str]:
    """argv of a module bundled in the core (or of several, ``NAME,NAME``): ``i --runtime worker NAME``
    by absolute path."""
    return [sys.executable, "-m", "i_core", "--runtime", "worker", name]


def bundle(
    modules: Iterable[str], bindings: dict[str, dict[str, Any]], *, alone: tuple[str, ...] = ()
) -> tuple[str, ...]:
    """The bundled modules of ``modules`` that share one process, in order: not bound, not
    ``alone`` (a module whose argv gets arguments of its own), and sharing no event or tool
    with another one (a frame does not say which module it is for)."""
    together: list[str] = []
    taken: set[str] = set()
    for module in modules:
        spec = MODULES[module]
        handles = {*spec.events, *(f"tool {tool['name']}" for tool in spec.tools)}
        if spec.bundled and module not in bindings and module not in alone and not handles & taken:
            together.append(module)
            taken |= handles
    return tuple(together)


def find_script(script: str) -> str | None:
    """A worker's console script: next to the running interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / script
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(script)
    return os.path.abspath(found) if found else None


def module_exec(
    module: str, bindings: dict[str, dict[str, Any]], config_dir: Path, together: tuple[str, ...] = ()
) -> dict[str, Any]:
    """The exec/cwd of a module's entries: its binding, else its official implementation (for a
    bundled module of ``together``, the one process they all share)."""
    if module in bindings:
        return dict(bindings[module])
    spec = MODULES[module]
    if spec.bundled:
        return {"exec": core_worker_argv(",".join(together) if module in together else module), "cwd": str(config_dir)}
    assert spec.script is not None and spec.package is not None
    found = find_script(spec.script)
    if found is None:
        raise ConfigError(
            f"module {module!r} needs the {spec.script!r} command, which is not installed: "
            f"run `pipx install {spec.package}` (or `pip install {spec.package}` in this environment), "
            f'or disable the module in {config_dir / "plugins.json"} with "disabled": ["{module}"]'
        )
    return {"exec": [found], "cwd": str(config_dir)}
