"""A running core: directories, workspace identity, the active manifest, the pool and its hooks.

Used as a context manager: entering starts, concurrently, the workers of the events up to the
first model request (``hooks.FIRST_REQUEST_EVENTS``) and ``also_start`` (a bound provider), and
asks the ``tools_list`` subscribers (MCP servers) for their tools on a helper thread, so the caller
loads what it needs meanwhile; reading ``manifest`` (or ``ready()``) waits for their answers and
raises their failure. A subscriber whose answer is kept (``kept_tools``) is not asked and not
started. Every other worker starts at its first call (a tool's worker when the model first calls
one of its tools), so a one-shot run pays only for the processes its first request needs.
Every worker process gets the ``hello`` handshake at its first call (``handshake``; a kept answer
spares the round trip), so an incompatible worker is refused before it is used.
Leaving — normally, on an error, on Ctrl-C or on SIGTERM — shuts the whole pool down.

A worker that cannot even be spawned (a missing or non-executable program, a missing cwd) is
still reported before the first request, started or not: loading the manifest resolves every
entry's program and cwd and refuses the run. A worker that starts but fails is reported by its
first call, with that call's context, as it always was.
"""

from __future__ import annotations

import signal
import threading
from pathlib import Path
from types import FrameType, TracebackType
from typing import Any

from i_protocol import Paths, ProtocolError, paths_from_env
from i_protocol.workspace import canonical_workspace, workspace_id_for, workspace_state_dir

from .errors import ConfigError
from .handshake import Handshakes, KeptHellos, expected_packages
from .hooks import FIRST_REQUEST_EVENTS, HookRunner
from .kept_tools import KeptTools
from .manifest import Exec, Manifest, ToolEntry
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
        self._manifest: Manifest = load_active_manifest(self.config_dir, manifest_path)
        self.pool = WorkerPool(self.paths, io_limit_bytes=io_limit_bytes)
        self.pool.handshakes = Handshakes(
            KeptHellos(self.paths.cache_dir, self.pool.environment), expected=expected_packages()
        )
        self.hooks = HookRunner(
            self._manifest, self.pool, {"workspace": self.workspace, "workspace_id": self.workspace_id}
        )
        self._previous_sigterm: Any = None
        self._announcing: threading.Thread | None = None
        self._announced: tuple[ToolEntry, ...] | BaseException = ()
        self.kept_tools = KeptTools(self.paths.cache_dir, self.pool.environment)
        self.also_start: list[Exec] = []
        """Workers the first request needs beyond the hooks' (a bound provider), started with them."""

    @property
    def manifest(self) -> Manifest:
        """The active manifest; once entered, with the tools that ``tools_list`` subscribers announced
        (waiting for their answers; a failed or refused answer is raised here, each time)."""
        return self.ready()

    @manifest.setter
    def manifest(self, value: Manifest) -> None:
        self._manifest = value

    def ready(self) -> Manifest:
        """Wait for the tools ``tools_list`` subscribers announce and return the complete manifest."""
        thread = self._announcing
        if thread is not None:
            thread.join()
            self._announcing = None
        if not isinstance(self._announced, BaseException) and self._announced:
            self._manifest = self.hooks.manifest = self._manifest.with_tools(self._announced)
            self._announced = ()
        if isinstance(self._announced, BaseException):
            raise self._announced
        return self._manifest

    @property
    def state_dir(self) -> Path:
        """``data_dir/workspaces/<id>/`` of this workspace."""
        return workspace_state_dir(self.workspace_id, self.paths.data_dir)

    def __enter__(self) -> Runtime:
        try:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _sigterm_to_exit)
        except ValueError:  # not the main thread: the caller owns signal handling
            self._previous_sigterm = None
        listers = self.hooks.subscribers("tools_list")
        kept = self.hooks.kept_answers(self.kept_tools) if listers else {}
        asked = [hook.exec for index, hook in enumerate(listers) if index not in kept]
        rest = tuple(event for event in FIRST_REQUEST_EVENTS if event != "tools_list")
        # A kept answer's worker starts at its first call.
        self.pool.start([*asked, *self.hooks.workers_for(rest), *self.also_start])
        if asked:
            self._announcing = threading.Thread(target=self._announce, args=(kept,), name="i-tools-list", daemon=True)
            self._announcing.start()
        elif kept:  # every answer was kept: nothing to wait for
            self._announce(kept)
            try:
                self.ready()
            except BaseException:
                self.__exit__(None, None, None)
                raise
        return self

    def _announce(self, kept: dict[int, dict[str, Any]]) -> None:
        try:
            self._announced = self.hooks.announced_tools(self.kept_tools, kept)
        except BaseException as exc:  # raised on the caller's thread, by ``manifest``
            self._announced = exc

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.pool.close()
        if self._announcing is not None:  # its call ends with the pool
            self._announcing.join(timeout=5)
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)


def _sigterm_to_exit(signum: int, frame: FrameType | None) -> None:
    # Turning SIGTERM into SystemExit runs the same cleanup as a normal exit.
    raise SystemExit(128 + signum)
