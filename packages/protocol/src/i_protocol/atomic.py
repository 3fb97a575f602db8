"""Atomic file replacement: write a sibling temporary file, fsync, rename over the target."""

from __future__ import annotations

import os


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
    tmp = os.path.join(directory, f".{os.path.basename(target)}.{os.getpid()}.{os.urandom(6).hex()}.tmp")
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
