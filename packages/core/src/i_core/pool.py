"""The worker host: one persistent process per (argv, canonical cwd), called sequentially.

No replay: a failed call is not retried. Any failure (timeout, protocol violation, error frame,
the worker exiting mid-call) evicts the worker and kills its whole process group; a later call
starts a fresh one. Every group is registered with i-protocol's reaper, so workers and their
children die with the core even when it is SIGKILLed (see packages/protocol/README.md).

A failure is one ``WorkerFailure`` whose message names the call, the worker (module and
command) and the problem once each; the host's ``CallError`` stays attached as its cause.
"""

from __future__ import annotations

import os
import shlex
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from i_protocol import CallError, ErrorFrame, Paths
from i_protocol.host import DEFAULT_DEADLINE_S, PROGRESS_CEILING_S, ProgressCallback, WorkerProcess
from i_protocol.host import DEFAULT_STDERR_LIMIT as DEFAULT_IO_LIMIT

from .errors import ConfigError, WorkerFailure, WorkerIncompatible
from .manifest import Exec

if TYPE_CHECKING:
    from .handshake import Handshakes

__all__ = [
    "DEFAULT_IO_LIMIT",
    "HostedWorker",
    "Spawn",
    "WorkerPool",
    "describe_worker",
    "worker_environment",
    "worker_name",
]

# The only variables a worker inherits (plus the four I_*_DIR): never API keys, never the approval token.
_PASSED_THROUGH = ("PATH", "SystemRoot", "TEMP", "TMP", "HOME", "USERPROFILE")


class HostedWorker(Protocol):
    """What the pool needs of a started worker: ``i_protocol.host.WorkerProcess`` or a test double."""

    @property
    def alive(self) -> bool:
        """True while the worker may be called again."""
        ...

    def call(
        self,
        event: str,
        data: dict[str, Any],
        *,
        context: Mapping[str, Any] | None = None,
        timeout: float = ...,
        progress: ProgressCallback | None = ...,
        ceiling: float = ...,
    ) -> dict[str, Any]:
        """One request and its answer's ``data``; a ``CallError`` when the call failed (``progress``:
        SPEC §3.4's progress frames, passed only to a worker that declared them)."""
        ...

    def kill(self) -> None:
        """Stop the worker at once (after a failure)."""
        ...

    def close(self, grace: float = ...) -> None:
        """Stop the worker gracefully (at the end of a run)."""
        ...


Spawn = Callable[[Exec], HostedWorker]
"""Starts the worker of one ``Exec``; raises ``CallError`` when it cannot."""


def worker_name(argv: tuple[str, ...] | list[str]) -> str:
    """How errors name a worker: its program, or for an interpreter the script or module it runs."""
    base = os.path.basename(argv[0])
    if not base.lower().startswith(("python", "pypy")) or len(argv) < 2:
        return base
    args = list(argv[1:])
    if args[:1] == ["-m"] and len(args) > 1:
        if args[1] == "i_core" and args[2:4] == ["--runtime", "worker"] and len(args) > 4:
            return f"i --runtime worker {args[4]}"  # a module bundled in the core
        return args[1]
    script = next((a for a in args if not a.startswith("-")), None)
    return os.path.basename(script) if script else base


def describe_worker(spec: Exec, module: str | None = None) -> str:
    """``module (command)``, or the command alone for a worker that is no module."""
    command = shlex.join(spec.argv)
    return f"{module} ({command})" if module else command


def worker_environment(paths: Paths, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The cleared environment of a worker: PATH, PYTHONUTF8=1, a few OS basics, I_*_DIR."""
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in _PASSED_THROUGH if name in source}
    env["PYTHONUTF8"] = "1"
    env.update(paths.as_env())
    return env


class WorkerPool:
    """Persistent workers keyed by (argv, cwd); the only global mutable state of the core.

    ``spawn`` starts one worker (default: a real process with the cleared environment), so the
    pool can also be run on in-process doubles.
    """

    def __init__(
        self,
        paths: Paths,
        *,
        io_limit_bytes: int = DEFAULT_IO_LIMIT,
        deadline: float = DEFAULT_DEADLINE_S,
        environ: Mapping[str, str] | None = None,
        spawn: Spawn | None = None,
        handshakes: Handshakes | None = None,
    ) -> None:
        self._env = worker_environment(paths, environ)
        self._io_limit = io_limit_bytes
        self._spawn = spawn or self._spawn_process
        self.deadline = deadline
        self._workers: dict[tuple[tuple[str, ...], str], HostedWorker] = {}
        self.handshakes = handshakes
        """Sends ``hello`` at each process's first call (``i_core.handshake``); None: no handshake."""
        self._greeted: dict[tuple[tuple[str, ...], str], HostedWorker] = {}
        self._lock = threading.Lock()
        self.closed = False

    @property
    def environment(self) -> dict[str, str]:
        """The cleared environment every worker gets (a provider gets its one key besides)."""
        return dict(self._env)

    def _spawn_process(self, spec: Exec) -> WorkerProcess:
        # A provider's explicitly named api_key_env is the one variable beyond the allow-list (SPEC §3.2).
        env = {**self._env, **{name: os.environ[name] for name in spec.env if name in os.environ}}
        return WorkerProcess.spawn(
            spec.argv, cwd=spec.cwd, env=env, stderr_limit=self._io_limit, name=worker_name(spec.argv)
        )

    def start(self, specs: Iterable[Exec]) -> None:
        """Start every worker that is not running yet, without waiting for any of them.

        The interpreters start in parallel, so the first turn does not pay each start-up in series.
        A worker that cannot start is reported by the first real call to it, with that call's context.
        """
        for spec in specs:
            try:
                self._get(spec)
            except (CallError, WorkerFailure):
                continue

    def _get(self, spec: Exec) -> HostedWorker:
        with self._lock:
            if self.closed:
                raise WorkerFailure("the worker pool is closed")
            worker = self._workers.get(spec.key)
            if worker is not None and worker.alive:
                return worker
            if worker is not None:
                self._workers.pop(spec.key, None)
                worker.kill()
            worker = self._spawn(spec)
            self._workers[spec.key] = worker
            return worker

    def call(
        self,
        spec: Exec,
        event: str,
        data: dict[str, Any],
        context: Mapping[str, Any] | None = None,
        *,
        module: str | None = None,
        deadline: float | None = None,
        progress: ProgressCallback | None = None,
    ) -> dict[str, Any]:
        """One call under the deadline (``deadline`` seconds instead of the pool's, for a provider's
        ``provider_request``: SPEC §3.4); on any failure the worker is evicted and killed.

        ``module`` names the worker in the one ``WorkerFailure`` a failure becomes (with the
        host's ``CallError`` as its cause): ``hook failed on 'EVENT': worker MODULE (COMMAND) PROBLEM``,
        or ``tool 'NAME' failed: ...`` for the ``tool`` event. ``progress`` receives the worker's
        progress frames when it declared the ``progress`` extension (each restarts the deadline, up to
        ``PROGRESS_CEILING_S``); an error frame of kind ``config`` from a worker that declared
        ``config_kind`` is a ``ConfigError`` (exit 3) with the worker's own message.
        """
        worker: HostedWorker | None = None
        try:
            worker = self._get(spec)
            self._greet(spec, worker, module)
            timeout = deadline or self.deadline
            if progress is not None and self._declared(spec, "progress"):
                return worker.call(
                    event, data, context=context, timeout=timeout, progress=progress, ceiling=PROGRESS_CEILING_S
                )
            return worker.call(event, data, context=context, timeout=timeout)
        except CallError as exc:
            if worker is not None:
                self._evict(spec, worker)
            if isinstance(exc, ErrorFrame) and exc.kind == "config" and self._declared(spec, "config_kind"):
                raise ConfigError(exc.message) from exc
            what = f"tool {data.get('name')!r} failed" if event == "tool" else f"hook failed on {event!r}"
            if event == "provider_request":
                what = "the model provider failed (no built-in adapter is used instead)"
            raise WorkerFailure(f"{what}: worker {describe_worker(spec, module)} {exc.problem}") from exc

    def greet(self, spec: Exec, module: str | None = None, *, lenient: bool = False) -> None:
        """Start the worker of ``spec`` if needed and make sure it was asked ``hello`` (so what it
        declared is known before the first call that depends on it); a failure is a ``WorkerFailure``,
        or, ``lenient``, left to that first call to report."""
        worker: HostedWorker | None = None
        try:
            worker = self._get(spec)
            self._greet(spec, worker, module)
        except (CallError, WorkerFailure) as exc:
            if worker is not None:
                self._evict(spec, worker)
            if lenient:
                return
            if isinstance(exc, WorkerFailure):
                raise
            raise WorkerFailure(
                f"hook failed on 'hello': worker {describe_worker(spec, module)} {exc.problem}"
            ) from exc

    def _declared(self, spec: Exec, extension: str) -> bool:
        return self.handshakes is not None and self.handshakes.declared(spec, extension)

    def _greet(self, spec: Exec, worker: HostedWorker, module: str | None) -> None:
        """The handshake at a process's first call: one round trip at most (none with a kept answer)."""
        if self.handshakes is None:
            return
        with self._lock:
            if self._greeted.get(spec.key) is worker:
                return
        try:
            self.handshakes.greet(spec, worker, module, self.deadline)
        except WorkerIncompatible:
            self._evict(spec, worker)
            raise
        with self._lock:
            self._greeted[spec.key] = worker

    def _evict(self, spec: Exec, worker: HostedWorker) -> None:
        with self._lock:
            if self._workers.get(spec.key) is worker:
                del self._workers[spec.key]
        worker.kill()

    def running(self) -> list[HostedWorker]:
        """The live workers (for diagnostics and tests)."""
        with self._lock:
            return list(self._workers.values())

    def close(self) -> None:
        """Shut every worker down (close stdin, then TERM and KILL its group if needed)."""
        with self._lock:
            self.closed = True
            workers = list(self._workers.values())
            self._workers.clear()
        threads = [threading.Thread(target=w.close, kwargs={"grace": 1.0}) for w in workers]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
