"""Where each module's program is: a binding, a script of the core itself, or an installed worker.

A worker's console script is looked up next to the running interpreter first (a pipx or venv
install of the core with its workers), then on PATH; the manifest gets its absolute path. A
selected module that is not installed is an error naming the package to install.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .modules import MODULES


def core_worker_argv(name: str) -> list[str]:
    """argv of a module bundled in the core: ``i --runtime worker NAME`` by absolute path."""
    return [sys.executable, "-m", "i_core", "--runtime", "worker", name]


def find_script(script: str) -> str | None:
    """A worker's console script: next to the running interpreter first, then on PATH."""
    beside = Path(sys.executable).parent / script
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    found = shutil.which(script)
    return os.path.abspath(found) if found else None


def module_exec(module: str, bindings: dict[str, dict[str, Any]], config_dir: Path) -> dict[str, Any]:
    """The exec/cwd of a module's entries: its binding, else its official implementation."""
    if module in bindings:
        return dict(bindings[module])
    spec = MODULES[module]
    if not spec.available:
        raise ConfigError(
            f"module {module!r} is not available in this version of i-core; "
            f'disable it in {config_dir / "plugins.json"} ("disabled": ["{module}"]), '
            f"pick another profile, or bind a replacement in bindings.json"
        )
    if spec.bundled:
        return {"exec": core_worker_argv(module), "cwd": str(config_dir)}
    assert spec.script is not None and spec.package is not None
    found = find_script(spec.script)
    if found is None:
        raise ConfigError(
            f"module {module!r} needs the {spec.script!r} command, which is not installed: "
            f"run `pipx install {spec.package}` (or `pip install {spec.package}` in this environment), "
            f'or disable the module in {config_dir / "plugins.json"} with "disabled": ["{module}"]'
        )
    return {"exec": [found], "cwd": str(config_dir)}
