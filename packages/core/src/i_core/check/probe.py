"""A worker under test: started in temporary directories, called one raw frame at a time.

Every call goes through ``i_protocol.host.WorkerProcess`` (the core's own host) and every answer
through ``i_protocol.host.parse_response``: the check sees exactly what a session would see. Calls
are sent as pre-encoded frames so that a check can choose the id, send a frame the encoder would
refuse, or send bytes that are not JSON at all.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any

from i_protocol import ErrorFrame, Paths
from i_protocol.framing import encode_frame
from i_protocol.host import WorkerProcess, parse_response

CALL_TIMEOUT_S = 5.0
"""Seconds a check waits for one ordinary answer (the core allows 15; a check should not need them)."""
STDERR_LIMIT = 64 * 1024


class CheckFailed(Exception):
    """A check found the worker breaking the contract; the message is the reason shown in the table."""


@dataclass(frozen=True)
class Target:
    """The implementation under test: its argv, its cwd, and where it came from."""

    argv: tuple[str, ...]
    cwd: str
    source: str
    """``bound`` (bindings.json), ``installed``, ``bundled`` or ``--exec``."""


@dataclass(frozen=True)
class Site:
    """Where a check runs: the temporary directories and workspace, never the user's."""

    paths: Paths
    workspace: str
    workspace_id: str
    environment: dict[str, str]

    @property
    def context(self) -> dict[str, Any]:
        """The top-level request context the core sends with every call."""
        return {"workspace": self.workspace, "workspace_id": self.workspace_id}


class Probe:
    """One running worker process of the target; a context manager that always ends it."""

    def __init__(self, target: Target, site: Site, extra_argv: tuple[str, ...] = ()) -> None:
        self.site = site
        self.started = time.monotonic()
        self.worker = WorkerProcess.spawn(
            [*target.argv, *extra_argv], cwd=target.cwd, env=site.environment, stderr_limit=STDERR_LIMIT
        )
        self._next_id = 1

    def __enter__(self) -> Probe:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.worker.close(grace=1.0)

    def call(
        self, event: str, data: dict[str, Any], *, timeout: float = CALL_TIMEOUT_S, request_id: int | None = None
    ) -> dict[str, Any]:
        """Send one request with the core's context; the answer's ``data`` or the CallError it is."""
        if request_id is None:
            request_id = self._next_id
            self._next_id += 1
        frame = encode_frame({"id": request_id, "event": event, **self.site.context, "data": data})
        return parse_response(self.send(frame, timeout=timeout), request_id)

    def send(self, frame: bytes, *, timeout: float = CALL_TIMEOUT_S) -> bytes:
        """Write raw bytes (one frame, or something that is not one) and return the raw answer line."""
        return self.worker.call_frame(frame, timeout=timeout)


@dataclass(frozen=True)
class Run:
    """One check run: the module, the target, the site, and a fresh worker per check."""

    module: str
    target: Target
    site: Site
    extra_argv: tuple[str, ...] = ()
    """Arguments the core appends for this module (steering's ``--queue PATH``)."""

    def probe(self) -> Probe:
        """Start a new worker of the target (each check gets its own, so failures do not cascade)."""
        return Probe(self.target, self.site, self.extra_argv)

    def config_file(self, name: str) -> str:
        """The path of ``config_dir/<name>``: where a module's config is discovered."""
        return f"{self.site.paths.config_dir}/{name}"


def expect_error(probe: Probe, event: str, data: dict[str, Any], what: str) -> str:
    """Pass when ``event`` with ``data`` gets an error frame; the detail quotes its start."""
    try:
        probe.call(event, data)
    except ErrorFrame as exc:
        return exc.problem.removeprefix("answered with an error: ")[:100]
    raise CheckFailed(f"{event} with {what} was answered with data; it must be refused with an error frame")
