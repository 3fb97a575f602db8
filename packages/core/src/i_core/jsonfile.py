"""The core's small files: reading JSON objects with errors that name the file and the problem, and
clearing the debris that killed atomic writes leave behind.

Every atomic write (``i_protocol.atomic_write_bytes``, init's exclusive create) goes through a
sibling temporary named ``.{target}.{pid}.{hex}.tmp`` that is renamed over the target; a process
killed in between leaves it forever. ``remove_stale_temporaries`` removes such files when no
writer can still own them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from i_protocol import ConfigError as ProtocolConfigError
from i_protocol.config import read_json_object as _read

from .errors import ConfigError

MAX_CONFIG_BYTES = 4 * 1024 * 1024
# ``.{target}.{pid}.{hex}.tmp``: i_protocol's atomic writes use 12 hex digits, init 8.
TEMPORARY = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]{1,10})\.[0-9a-f]{8,64}\.tmp")
STALE_AFTER_S = 3600.0
"""A temporary unchanged this long is debris whatever its pid says (the pid may have been reused)."""
SETTLE_S = 60.0
"""A temporary whose writer is not running is debris once unchanged this long (a writer in another
PID namespace, e.g. a container sharing the folder, looks "not running" from here)."""


def read_json_object(path: Path, *, what: str, limit: int = MAX_CONFIG_BYTES) -> dict[str, Any]:
    """Read a JSON object from ``path``; every failure is a (core) ConfigError naming the file."""
    try:
        return _read(str(path), what=what, limit=limit)
    except ProtocolConfigError as exc:
        raise ConfigError(str(exc)) from None


def read_optional_json_object(path: Path, *, what: str) -> dict[str, Any] | None:
    """Like read_json_object, but a missing file gives None."""
    if not path.exists():
        return None
    return read_json_object(path, what=what)


def _running(pid: int) -> bool:
    """Whether a process ``pid`` exists on this machine (unknown counts as running)."""
    if pid == os.getpid():
        return True
    if os.name == "nt":
        return True  # os.kill would terminate it: on Windows only the age decides
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OverflowError, ValueError):
        return False  # no such pid can exist
    except OSError:
        return True  # e.g. EPERM: it exists, it is someone else's
    return True


def remove_stale_temporaries(
    folder: Path,
    *,
    targets: Collection[str] | Callable[[str], bool] | None = None,
    owned: Collection[str] = (),
    now: float | None = None,
) -> list[Path]:
    """Remove the debris of killed atomic writes in ``folder`` (not below it); returns what went.

    Only regular files named ``.{target}.{pid}.{hex}.tmp`` are considered, and of those only the
    ones whose ``target`` is in ``targets`` (a collection of names or a predicate; None: any).
    A temporary of a target in ``owned`` — files only the caller may write now, because it holds
    their lock — is removed unless this process wrote it. Any other is removed when its writer's
    pid is not running and it has not changed for ``SETTLE_S`` seconds, or when it has not changed
    for ``STALE_AFTER_S``. Never raises: cleaning up is best effort.
    """
    now = time.time() if now is None else now
    accept = targets if callable(targets) else (lambda _name: True) if targets is None else targets.__contains__
    removed: list[Path] = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        match = TEMPORARY.fullmatch(entry.name)
        if match is None or not accept(match["target"]):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if not entry.is_file(follow_symlinks=False):
            continue
        pid = int(match["pid"])
        age = now - info.st_mtime
        if match["target"] in owned:
            stale = pid != os.getpid()
        else:
            stale = age >= STALE_AFTER_S or (age >= SETTLE_S and not _running(pid))
        if not stale:
            continue
        try:
            os.unlink(entry.path)
        except OSError:
            continue
        removed.append(Path(entry.path))
    return removed
