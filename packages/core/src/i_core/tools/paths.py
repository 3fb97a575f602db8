"""Path arguments: relative ones resolve against the workspace; absolute ones are used as given."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ToolError
from .text import printable


def resolve(tool: str, raw: str, workspace: Path) -> Path:
    """The absolute, normalised path an argument names (no symlink resolution, no ``~`` expansion)."""
    if "\x00" in raw:
        raise ToolError(f"{tool}: path {printable(raw)!r} contains a NUL character")
    try:
        os.fsencode(raw)
    except UnicodeEncodeError:
        raise ToolError(f"{tool}: path {printable(raw)!r} is not valid Unicode (it contains a lone surrogate)")
    path = Path(raw)
    if not path.is_absolute():
        path = workspace / path
    return Path(os.path.normpath(path))


def display(path: Path, workspace: Path) -> str:
    """How a path is shown to the model and the user: relative inside the workspace, else absolute."""
    try:
        relative = path.relative_to(workspace).as_posix()
    except ValueError:
        return printable(str(path))
    return printable(relative or ".")
