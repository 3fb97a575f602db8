"""Runs a built-in tool in two steps: ``prepare`` before approval, ``execute`` after it."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ToolError
from .contract import Prepared, ToolContext, ToolResult
from .files import prepare_edit, prepare_read, prepare_write
from .globbing import prepare_glob
from .images import prepare_view_image
from .paths import display
from .recall import prepare_recall
from .search import prepare_search
from .shell import prepare_shell
from .text import printable

FREE_TOOLS = frozenset({"read", "view_image", "recall"})

_PREPARERS: dict[str, Callable[[object, ToolContext], Prepared]] = {
    "read": prepare_read,
    "write": prepare_write,
    "edit": prepare_edit,
    "glob": prepare_glob,
    "search": prepare_search,
    "shell": prepare_shell,
    "view_image": prepare_view_image,
    "recall": prepare_recall,
}


def prepare(name: str, arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a built-in tool call and take what approval needs (summary, file snapshot)."""
    preparer = _PREPARERS.get(name)
    if preparer is None:
        raise ToolError(f"unknown tool {printable(name)!r}; built-in tools: {', '.join(_PREPARERS)}")
    try:
        return preparer(arguments, ctx)
    except OSError as exc:
        raise ToolError(f"{name}: {_where(exc)}{exc.strerror or exc}")


def execute(prepared: Prepared, ctx: ToolContext) -> ToolResult:
    """Run an approved call; ``edit``/``write`` refuse if the file changed since ``prepare``."""
    try:
        return prepared.run(ctx)
    except OSError as exc:
        where = f"{display(prepared.path, ctx.workspace)}: " if prepared.path is not None else _where(exc)
        raise ToolError(f"{prepared.name}: {where}{exc.strerror or exc}")


def _where(exc: OSError) -> str:
    return f"{printable(str(exc.filename))}: " if exc.filename else ""
