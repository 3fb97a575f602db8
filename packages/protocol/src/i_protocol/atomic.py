"""Atomic file writes and their temporaries: the one home of the temporary's name and its cleanup.

Every atomic write goes through a sibling temporary named ``.{target}.{pid}.{hex}.tmp``
(``temporary_path``) that is renamed (``atomic_write_bytes``) or hard-linked (``create_exclusive``)
into place; a process killed in between leaves it forever, and ``remove_stale_temporaries``
removes such files when no writer can still own them.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Collection
from pathlib import Path

TEMPORARY = re.compile(r"\.(?P<target>.+)\.(?P<pid>[0-9]{1,10})\.[0-9a-f]{8,64}\.tmp")
"""The name ``temporary_path`` gives (8 hex digits were used by older cores' init: still matched)."""
STALE_AFTER_S = 3600.0
"""A temporary unchanged this long is debris whatever its pid says (the pid may have been reused)."""
SETTLE_S = 60.0
"""A temporary whose writer is not running is debris once unchanged this long (a writer in another
PID namespace, e.g. a container sharing the folder, looks "not running" from here)."""


def temporary_path(target: str | os.PathLike[str]) -> str:
    """A unique sibling of ``target`` to write before it is moved into place: ``.{name}.{pid}.{hex}.tmp``."""
    path = os.fspath(target)
    directory = os.path.dirname(os.path.abspath(path))
    return os.path.join(directory, f".{os.path.basename(path)}.{os.getpid()}.{os.urandom(6).hex()}.tmp")


def atomic_write_bytes(
    path: str | os.PathLike[str], data: bytes, mode: int = 0o600, *, durable: bool = True, exact_mode: bool = False
) -> None:
    """Replace ``path`` with ``data`` so readers see the old or the new content, never a mix.

    ``mode`` is filtered by the umask unless ``exact_mode`` (e.g. to keep an edited file's mode).
    ``durable=False`` skips the two fsyncs: the replacement stays atomic for readers, but a
    power loss may lose it. Right for statistics, wrong for sessions and user data.
    """
    target = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(target))
    os.makedirs(directory, exist_ok=True)
    # A unique sibling name; O_EXCL makes a collision an error rather than a shared file.
    tmp = temporary_path(target)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        if exact_mode:
            os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        _fsync_dir(directory)


def create_exclusive(path: str | os.PathLike[str], data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists (False then); never overwrites, never half a file.

    Written aside, then hard-linked into place: the link fails if the file exists, so a user's file
    is never overwritten even by a concurrent writer. An ``OSError`` is the caller's to word.
    """
    target = os.fspath(path)
    if os.path.exists(target):
        return False
    tmp = temporary_path(target)
    try:
        with open(tmp, "xb") as handle:
            handle.write(data)
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    return True


def remove_stale_temporaries(
    folder: str | os.PathLike[str],
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


def _fsync_dir(directory: str) -> None:
    # Makes the rename durable; not supported on every platform, so best effort.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
