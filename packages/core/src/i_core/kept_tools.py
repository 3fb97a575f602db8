"""``tools_list`` answers kept between runs, so a session starts without the workers that gave them.

A ``tools_list`` answer may carry ``depends_on``: the stamps (``i_protocol.files.file_stamp``:
``{path, size, mtime_ns, ino}``, ``None`` values for a file that was absent) of every file the
answer was derived from, each taken before the worker read it. The core then keeps the answer's
tools in ``cache_dir/core/tools-list/<key>.json``, where ``key`` is the SHA-256 of this core's
version, the worker's argv, cwd, environment and module, and the request context (workspace and
its id). A later session uses the kept tools, and starts that worker only at its first tool call,
when every stamp still holds: the worker's own files, and the program files of its argv, which
the core stamps itself (an upgraded worker is asked again). Any difference, a missing or
unreadable entry, or tools that no longer pass the ``tools_list`` checks ask the worker again.

The entries are derived data: one that cannot be read is ignored and replaced, one that cannot
be written only costs the next session a start.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any

from i_protocol.atomic import atomic_write_bytes
from i_protocol.errors import FileError
from i_protocol.files import file_stamp, read_json
from i_protocol.jsonsafe import dumps_safe

from .__about__ import __version__
from .errors import HookResultError
from .manifest import Exec, HookEntry

FORMAT = "i-tools-list/1"
MAX_ENTRY_BYTES = 8 * 1024 * 1024
MAX_DEPENDS_ON = 4096
_STAMP_KEYS = ("path", "size", "mtime_ns", "ino")


def depends_on(answer: dict[str, Any], sent: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The answer's ``depends_on`` stamps (None when it has none); a malformed one is a HookResultError."""
    stamps = answer.get("depends_on")
    if stamps is None:
        return None
    if not isinstance(stamps, list) or len(stamps) > MAX_DEPENDS_ON:
        raise HookResultError(f"returned depends_on that is not a list of at most {MAX_DEPENDS_ON} file stamps")
    for index, stamp in enumerate(stamps):
        if not _is_stamp(stamp):
            raise HookResultError(
                f"returned depends_on[{index}] that is not a file stamp "
                "{path: absolute path, size, mtime_ns, ino: integers, or all null for an absent file}"
            )
    return stamps


def _is_stamp(stamp: object) -> bool:
    if not isinstance(stamp, dict) or set(stamp) != set(_STAMP_KEYS):
        return False
    path = stamp["path"]
    if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
        return False
    values = [stamp[key] for key in _STAMP_KEYS[1:]]
    if all(value is None for value in values):
        return True
    return all(isinstance(value, int) and not isinstance(value, bool) and value >= 0 for value in values)


class KeptTools:
    """The kept ``tools_list`` answers of one core's workers (their environment is part of the key)."""

    def __init__(self, cache_dir: str, environment: Mapping[str, str]) -> None:
        self.folder = os.path.join(cache_dir, "core", "tools-list")
        self._environment = sorted(environment.items())

    def path(self, hook: HookEntry, context: Mapping[str, Any]) -> str:
        """Where the answer of ``hook`` for ``context`` is kept."""
        spec = hook.exec
        place = sorted(context.items())  # a workspace path may hold undecodable bytes (lone surrogates)
        identity = [__version__, list(spec.argv), spec.cwd, list(spec.env), self._environment, hook.module, place]
        digest = hashlib.sha256(dumps_safe(identity)).hexdigest()
        return os.path.join(self.folder, f"{digest}.json")

    def load(self, hook: HookEntry, context: Mapping[str, Any]) -> dict[str, Any] | None:
        """The kept answer (``{"tools": [...]}``) while every stamp it depends on still holds, else None."""
        try:
            entry = read_json(self.path(hook, context), MAX_ENTRY_BYTES, what="kept tools_list answer", lossless=True)
        except (OSError, FileError, TypeError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        stamps, tools = entry.get("depends_on"), entry.get("tools")
        if not isinstance(stamps, list) or not isinstance(tools, list) or not all(map(_is_stamp, stamps)):
            return None
        if any(file_stamp(stamp["path"]) != stamp for stamp in stamps):
            return None
        return {"tools": tools}

    def store(
        self, hook: HookEntry, context: Mapping[str, Any], tools: list[dict[str, Any]], stamps: list[dict[str, Any]]
    ) -> None:
        """Keep ``tools`` until one of ``stamps`` (or a program file of the worker) changes."""
        entry = {"format": FORMAT, "depends_on": [*stamps, *_program_stamps(hook.exec)], "tools": tools}
        try:
            atomic_write_bytes(self.path(hook, context), dumps_safe(entry), durable=False)
        except (OSError, TypeError):  # derived data: the next session asks the worker again
            pass


def _program_stamps(spec: Exec) -> list[dict[str, Any]]:
    """Stamps of the argv elements that are files (the interpreter, a console script, a script)."""
    return [file_stamp(arg) for arg in spec.argv if os.path.isabs(arg) and os.path.isfile(arg)]
