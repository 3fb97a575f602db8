"""Sessions on disk: atomic checkpoints, workspace check, one writer at a time.

A session file is ``{"format": "i-session/1", "workspace", "workspace_id", "messages", "meta"}``.
Saves replace the file atomically, so a crash or a failed turn leaves the last complete
checkpoint. Text that cannot be encoded as strict UTF-8 (lone surrogates from a bad decode) is
kept losslessly through JSON ``\\u`` escapes instead of failing the save.

One writer at a time: ``<session>.json.lock`` is held (``i_protocol.files.acquire_lock``: ``flock``
on Unix, filelock's ``FileLock`` elsewhere) while the session is open. Where ``flock`` is used, the
holder unlinks the lock file just before releasing it (``remove_on_release``): a waiter that had
opened it checks, once it holds the lock, that the file is still the one at the path, and locks the
new one otherwise, so no two writers. filelock does not check (tox-dev/filelock#574), so on its
fallback the lock file stays. A *private* session, a fresh path this run made up and told nobody,
is locked only at its first save, so a run that saves nothing leaves nothing behind.

The project's session folder (``<project>/.i/sessions``) gets a ``.gitignore`` of ``*`` when this
module creates it: sessions are local state, never the project's content (``.i`` itself is not
ignored: ``.i/skills`` holds the project's skills).

Opening a session removes stale atomic-write temporaries in its folder (see
``i_protocol.atomic.remove_stale_temporaries``): this session's own at once, since its lock is held; other
``.json`` targets' only when their writer is gone.

Every OS error is a SessionError naming the path and the problem.

Each save records the core that wrote it (``meta.written_by``: ``{"package": "i-core", "version"}``).
Opening a session that a newer core wrote warns in one line and goes on, so a rollback of the core
keeps working sessions instead of failing on what it does not know.
"""

from __future__ import annotations

import os
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from i_protocol import atomic_write_bytes
from i_protocol.atomic import remove_stale_temporaries
from i_protocol.errors import FileDecodeError, FileTooLarge, LockTimeout
from i_protocol.files import acquire_lock, read_json
from i_protocol.jsonsafe import dumps_safe  # one lossless policy for lone surrogates

from .__about__ import __version__
from .errors import SessionError, os_problem
from .preflight import version_key

FORMAT = "i-session/1"
WRITTEN_BY = {"package": "i-core", "version": __version__}
MAX_SESSION_BYTES = 512 * 1024 * 1024
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def session_path_for_name(workspace: str, name: str) -> Path:
    """``<workspace>/.i/sessions/NAME.json`` for ``--session-name NAME``."""
    if not _NAME.fullmatch(name) or name.endswith(".json"):
        raise SessionError(
            f"session name {name!r} is invalid: use 1-64 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return project_sessions(workspace) / f"{name}.json"


def project_sessions(workspace: str) -> Path:
    """``<workspace>/.i/sessions``: the project's session folder (``--session-name``)."""
    return Path(workspace).absolute() / ".i" / "sessions"


@dataclass
class Session:
    """An open session: where it lives, whose workspace it is, its messages and metadata."""

    path: Path
    workspace: str
    workspace_id: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    _lock: Any = None
    private: bool = False
    """A fresh path nobody else knows: locked at its first save, not at open."""

    @property
    def is_new(self) -> bool:
        """True before the first checkpoint."""
        return not self.messages

    def document(self) -> dict[str, Any]:
        """The JSON document this session is saved as."""
        return {
            "format": FORMAT,
            "workspace": self.workspace,
            "workspace_id": self.workspace_id,
            "messages": self.messages,
            "meta": {
                **self.meta,
                "updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "written_by": dict(WRITTEN_BY),
            },
        }

    def backup_path(self, suffix: str) -> Path:
        """``<session>.<suffix>.json`` beside the session, e.g. ``.precompact.json``."""
        return self.path.with_name(self.path.name.removesuffix(".json") + f".{suffix}.json")

    def write(self, messages: list[dict[str, Any]]) -> None:
        """Atomically replace the file with ``messages`` (the caller ran before_save)."""
        doc = {**self.document(), "messages": messages}
        self._save(self.path, dumps_safe(doc) + b"\n", "save the session")
        self.messages = messages

    def write_backup(self, suffix: str, messages: list[dict[str, Any]]) -> Path:
        """Write a sibling backup (``<session>.<suffix>.json``), e.g. the pre-compaction history."""
        backup = self.backup_path(suffix)
        doc = {**self.document(), "messages": messages}
        self._save(backup, dumps_safe(doc) + b"\n", f"write the {suffix} backup")
        return backup

    def _save(self, target: Path, data: bytes, what: str) -> None:
        if self._lock is None and self.private:
            self._lock = _lock(self.path)  # a private session's first save
        try:
            atomic_write_bytes(target, data, mode=0o600)
        except OSError as exc:
            raise SessionError(f"{target}: cannot {what}: {os_problem(exc)}; the file on disk is unchanged") from None

    def close(self) -> None:
        """Release the session lock (its holder removes its file where ``flock`` is used)."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None


def open_session(
    path: Path,
    workspace: str,
    workspace_id: str,
    *,
    private: bool = False,
    warn: Callable[[str], None] | None = None,
) -> Session:
    """Open (or start) the session at ``path``, locked against a second concurrent writer.

    ``private``: ``path`` is a fresh name this run made up (the default session of a run); it is
    locked at its first save instead, so a run that never saves leaves no lock file behind.
    ``warn`` gets the one line about a session a newer core wrote (default: ``i: warning: ...`` on stderr).
    """
    path = path.expanduser().absolute()
    created = not path.parent.is_dir()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if created and path.parent == project_sessions(workspace):
            (path.parent / ".gitignore").write_text("*\n", encoding="utf-8")
    except OSError as exc:
        raise SessionError(f"{path}: cannot create the session's folder: {os_problem(exc)}") from None
    private = private and not os.path.lexists(path)
    lock = None if private else _lock(path)
    try:
        # This session's own temporaries are debris once its lock is held (a private session has none).
        remove_stale_temporaries(
            path.parent,
            targets=lambda name: name.endswith((".json", ".archive.jsonl")),
            owned=() if private else _own_targets(path),
        )
        session = _read(path, workspace, workspace_id)
    except BaseException:
        if lock is not None:
            lock.release()
        raise
    session._lock = lock
    session.private = private
    newer = written_by_newer(session)
    if newer is not None:
        (warn or _warn_on_stderr)(newer)
    return session


def written_by_newer(session: Session) -> str | None:
    """The warning for a session whose ``meta.written_by`` names a newer i-core than this one."""
    writer = session.meta.get("written_by")
    if not isinstance(writer, dict) or writer.get("package") != "i-core":
        return None
    version = writer.get("version")
    if not isinstance(version, str) or version_key(version) <= version_key(__version__):
        return None
    return (
        f"{session.path} was written by i-core {version}, newer than this i-core {__version__}; "
        "continuing (what this version does not know may be lost at its next save)"
    )


def _warn_on_stderr(line: str) -> None:
    sys.stderr.write(f"i: warning: {line}\n")


def _own_targets(path: Path) -> set[str]:
    """The files a session's lock guards: the session, its pre-compaction backup and its archive."""
    stem = path.name.removesuffix(".json")
    return {path.name, f"{stem}.precompact.json", f"{stem}.archive.jsonl"}


def _lock(path: Path) -> Any:
    """The acquired lock of the session at ``path`` (``<path>.lock``), or a SessionError."""
    try:
        return acquire_lock(path, timeout=0, remove_on_release=True)
    except LockTimeout:
        raise SessionError(f"{path}: the session is in use by another i process") from None
    except OSError as exc:
        raise SessionError(f"{path}: cannot lock the session: {os_problem(exc)}") from None


def _read(path: Path, workspace: str, workspace_id: str) -> Session:
    if not path.exists():
        return Session(path=path, workspace=workspace, workspace_id=workspace_id)
    try:
        doc = read_json(path, MAX_SESSION_BYTES, what="session", lossless=True)
    except OSError as exc:
        raise SessionError(f"{path}: cannot read session: {exc.strerror or exc}") from None
    except FileTooLarge as exc:
        raise SessionError(str(exc)) from None
    except FileDecodeError as exc:
        raise SessionError(
            f"{path}: session file is corrupt or truncated ({exc.reason}); it was left untouched — "
            "restore it from a backup or start a new session"
        ) from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT or not isinstance(doc.get("messages"), list):
        raise SessionError(f"{path}: not an i session file (expected format {FORMAT!r} with a messages list)")
    if doc.get("workspace_id") != workspace_id:
        raise SessionError(
            f"{path}: this session belongs to another workspace "
            f"({doc.get('workspace')!r}, id {doc.get('workspace_id')}); "
            f"the current workspace is {workspace!r} (id {workspace_id})"
        )
    meta: dict[str, Any] = doc["meta"] if isinstance(doc.get("meta"), dict) else {}
    return Session(path=path, workspace=workspace, workspace_id=workspace_id, messages=doc["messages"], meta=meta)


# -- finding sessions (read only: `i --continue`, `i --runtime sessions`) ---------------------------


@dataclass
class SessionInfo:
    """What `i --runtime sessions` shows of one session file (read without taking its lock)."""

    path: Path
    updated: float
    """The file's mtime: the last checkpoint."""
    size: int
    messages: int = 0
    compactions: int = 0
    """Compaction summaries (``_compaction`` messages) in the history."""
    precompact: bool = False
    """A ``<session>.precompact.json`` backup sits beside it."""
    title: str = ""
    """The first user request's text, on one line, cut at ``TITLE_CHARS`` (empty when there is none)."""
    problem: str | None = None
    """Why it cannot be continued here (another workspace, corrupt, ...); None when it can."""

    @property
    def name(self) -> str:
        """The file name without ``.json`` (what ``--session-name`` takes for a project session)."""
        return self.path.name.removesuffix(".json")


def session_folders(workspace: str, state_dir: Path) -> list[Path]:
    """Where a project's sessions live: ``<project>/.i/sessions`` (named) and the state folder (default)."""
    return [project_sessions(workspace), Path(state_dir) / "sessions"]


def session_files(folders: list[Path]) -> list[Path]:
    """Session files in ``folders``, the most recently saved first (backups and temporaries left out)."""
    found: list[tuple[float, str, Path]] = []
    for folder in folders:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            if not name.endswith(".json") or name.endswith(".precompact.json") or name.startswith("."):
                continue
            try:
                if entry.is_file():
                    found.append((entry.stat().st_mtime, name, Path(entry.path)))
            except OSError:
                continue
    found.sort(key=lambda item: (item[0], item[1]), reverse=True)
    return [path for _mtime, _name, path in found]


def session_info(path: Path, workspace: str, workspace_id: str) -> SessionInfo:
    """Read ``path`` with the same checks as open_session (format, workspace) but without locking it."""
    try:
        stat_result = path.stat()
    except OSError as exc:
        return SessionInfo(path, 0.0, 0, problem=os_problem(exc))
    info = SessionInfo(
        path,
        stat_result.st_mtime,
        stat_result.st_size,
        precompact=path.with_name(path.name.removesuffix(".json") + ".precompact.json").exists(),
    )
    try:
        session = _read(path, workspace, workspace_id)
    except SessionError as exc:
        info.problem = str(exc).removeprefix(f"{path}: ")
        return info
    info.messages = len(session.messages)
    info.compactions = sum(1 for message in session.messages if isinstance(message, dict) and "_compaction" in message)
    info.title = session_title(session.messages)
    return info


TITLE_CHARS = 60


def session_title(messages: list[Any]) -> str:
    """The first real user request's words (not a summary, a snapshot or piped input), on one line,
    cut at ``TITLE_CHARS`` with "…"."""
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "user":
            continue
        if any(key in message for key in ("_compaction", "_context", "_steering")):
            continue
        content = message.get("content")
        if isinstance(content, list):
            content = " ".join(
                str(part.get("text", ""))
                for part in content
                if isinstance(part, dict)
                and part.get("type") == "text"
                and not part.get("_stdin")
                and not part.get("_interrupted")
            )
        text = " ".join(str(content or "").split())
        if text:
            return text if len(text) <= TITLE_CHARS else text[: TITLE_CHARS - 1] + "…"
    return ""


def latest_session(workspace: str, workspace_id: str, state_dir: Path) -> Path | None:
    """The project's most recently saved session that belongs to this workspace, or None."""
    for path in session_files(session_folders(workspace, state_dir)):
        if session_info(path, workspace, workspace_id).problem is None:
            return path
    return None
