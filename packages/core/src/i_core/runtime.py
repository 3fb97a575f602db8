"""A running core: directories, workspace identity, the active manifest, the pool and its hooks.

Used as a context manager: entering starts, concurrently, the workers of the events up to the
first model request (``hooks.FIRST_REQUEST_EVENTS``) and adds the tools that ``tools_list``
subscribers announce (MCP servers) to the manifest; every other worker starts at its first call
(a tool's worker when the model first calls one of its tools), so a one-shot run pays only for the
processes its first request needs. Leaving — normally, on an error, on Ctrl-C or on SIGTERM —
shuts the whole pool down.

A worker that cannot even be spawned (a missing or non-executable program, a missing cwd) is
still reported before the first request, started or not: loading the manifest resolves every
entry's program and cwd and refuses the run. A worker that starts but fails is reported by its
first call, with that call's context, as it always was.
"""

from __future__ import annotations

import signal
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from i_protocol import Paths, ProtocolError, paths_from_env
from i_protocol.workspace import canonical_workspace, workspace_id_for, workspace_state_dir

from .errors import ConfigError
from .hooks import FIRST_REQUEST_EVENTS, HookRunner
from .manifest import Manifest
from .pool import DEFAULT_IO_LIMIT, WorkerPool
from .selection import load_active_manifest


class Runtime:
    """Everything a session needs from the platform, with the pool's lifetime attached."""

    def __init__(
        self,
        workspace: str | Path,
        *,
        manifest_path: Path | None = None,
        io_limit_bytes: int = DEFAULT_IO_LIMIT,
        paths: Paths | None = None,
    ) -> None:
        try:
            self.paths = paths or paths_from_env()
            self.workspace = canonical_workspace(workspace)
            self.workspace_id = workspace_id_for(self.workspace, self.paths.data_dir)
        except ProtocolError as exc:
            raise ConfigError(str(exc)) from None
        self.config_dir = Path(self.paths.config_dir)
        self.manifest: Manifest = load_active_manifest(self.config_dir, manifest_path)
        self.pool = WorkerPool(self.paths, io_limit_bytes=io_limit_bytes)
        self.hooks = HookRunner(
            self.manifest, self.pool, {"workspace": self.workspace, "workspace_id": self.workspace_id}
        )
        self._previous_sigterm: Any = None

    @property
    def state_dir(self) -> Path:
        """``data_dir/workspaces/<id>/`` of this workspace."""
        return workspace_state_dir(self.workspace_id, self.paths.data_dir)

    def __enter__(self) -> Runtime:
        try:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_exit)
        except ValueError:  # not the main thread: the caller owns signal handling
            self._previous_sigterm = None
        self.pool.start(self.hooks.workers_for(FIRST_REQUEST_EVENTS))
        try:
            self.manifest = self.hooks.announce_tools()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.pool.close()
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)


def _sigterm_to_exit(signum: int, frame: FrameType | None) -> None:
    # Turning SIGTERM into SystemExit runs the same cleanup as a normal exit.
    raise SystemExit(128 + signum)
