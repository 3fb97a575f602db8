"""Runs a built-in tool in two steps: ``prepare`` before approval, ``execute`` after it."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import ToolError
from .contract import DeadlineRunner, Prepared, ToolContext, ToolResult
from .deadline import within_deadline
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
    "shell": prepare_shell,
    "view_image": prepare_view_image,
    "recall": prepare_recall,
}
# The tools whose cost the model's pattern decides: they run under a deadline (``deadline.py``).
_BOUNDED: dict[str, Callable[[object, ToolContext, DeadlineRunner], Prepared]] = {
    "glob": prepare_glob,
    "search": prepare_search,
}
_NAMES = ("read", "write", "edit", "glob", "search", "shell", "view_image", "recall")


def prepare(name: str, arguments: object, ctx: ToolContext, *, within: DeadlineRunner = within_deadline) -> Prepared:
    """Validate a built-in tool call and take what approval needs (summary, file snapshot).

    ``within`` runs a ``glob`` or ``search`` call under its deadline (the fallback's child passes its own)."""
    preparer = _PREPARERS.get(name)
    bounded = _BOUNDED.get(name)
    try:
        if bounded is not None:
            return bounded(arguments, ctx, within)
        if preparer is not None:
            return preparer(arguments, ctx)
    except OSError as exc:
        raise ToolError(f"{name}: {_where(exc)}{exc.strerror or exc}")
    raise ToolError(f"unknown tool {printable(name)!r}; built-in tools: {', '.join(_NAMES)}")


def execute(prepared: Prepared, ctx: ToolContext) -> ToolResult:
    """Run an approved call; ``edit``/``write`` refuse if the file changed since ``prepare``."""
    try:
        return prepared.run(ctx)
    except OSError as exc:
        where = f"{display(prepared.path, ctx.workspace)}: " if prepared.path is not None else _where(exc)
        raise ToolError(f"{prepared.name}: {where}{exc.strerror or exc}")


def _where(exc: OSError) -> str:
    return f"{printable(str(exc.filename))}: " if exc.filename else ""
