"""The unified diff of what a prepared ``edit`` or ``write`` would do, computed before it runs.

Used by the approval prompt (shown, sanitised) and by the event stream (``tool_result``'s
``diff``, raw text in JSON).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from i_protocol.errors import FileError
from i_protocol.files import read_bytes

MAX_DIFF_BYTES = 8 * 1024 * 1024
"""A file larger than this gets no diff (its preview would be cut to a few lines anyway)."""


def change_diff(prepared: object, limit: int) -> list[str] | None:
    """The diff's lines (at most ``limit``, then one line that says how many more), ``[]`` for an
    edit that changes nothing, None for any other tool or an unreadable file (or one over
    ``MAX_DIFF_BYTES``)."""
    name = getattr(prepared, "name", None)
    path = getattr(prepared, "path", None)
    arguments = getattr(prepared, "arguments", None) or {}
    if name not in ("edit", "write") or path is None:
        return None
    try:
        old = read_bytes(path, MAX_DIFF_BYTES).decode("utf-8", "replace") if Path(path).exists() else ""
    except (OSError, FileError):
        return None
    if name == "write":
        new = str(arguments.get("content", ""))
    else:
        old_string, new_string = str(arguments.get("old_string", "")), str(arguments.get("new_string", ""))
        new = (
            old.replace(old_string, new_string)
            if arguments.get("replace_all")
            else old.replace(old_string, new_string, 1)
        )
    shown = str(arguments.get("path", path))
    lines = list(difflib.unified_diff(old.splitlines(), new.splitlines(), f"a/{shown}", f"b/{shown}", lineterm="", n=3))
    if len(lines) > limit:
        rest = len(lines) - limit
        lines = [*lines[:limit], f"… {rest} more line{'s' if rest != 1 else ''}"]
    return lines
