"""The worker host: one persistent process per (argv, canonical cwd), called sequentially.

No replay: a failed call is not retried. Any failure (timeout, protocol violation, error frame,
the worker exiting mid-call) evicts the worker and kills its whole process group; a later call
starts a fresh one. Every group is registered with i-protocol's reaper, so workers and their
children die with the core even when it is SIGKILLed (see packages/protocol/README.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from i_protocol import CallError, ErrorFrame, Paths
from i_protocol.host import WorkerProcess

from .errors import WorkerFailure
from .manifest import Exec

DEADLINE_S = 15.0
DEFAULT_IO_LIMIT = 1024 * 1024
# The only variables a worker inherits (plus the four I_*_DIR): never API keys, never the approval token.
_PASSED_THROUGH = ("PATH", "SystemRoot", "TEMP", "TMP", "HOME", "USERPROFILE")


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


def worker_environment(paths: Paths, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The cleared environment of a worker: PATH, PYTHONUTF8=1, a few OS basics, I_*_DIR."""
    source = os.environ if environ is None else environ
    env = {name: source[name] for name in _PASSED_THROUGH if name in source}
    env["PYTHONUTF8"] = "1"
    env.update(paths.as_env())
    return env


class WorkerPool:
    """Persistent workers keyed by (argv, cwd); the only global mutable state of the core."""

    def __init__(
        self,
        paths: Paths,
        *,
        io_limit_bytes: int = DEFAULT_IO_LIMIT,
        deadline: float = DEADLINE_S,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self._env = worker_environment(paths, environ)
        self._io_limit = io_limit_bytes
        self.deadline = deadline
        self._workers: dict[tuple[tuple[str, ...], str], WorkerProcess] = {}
        self._lock = threading.Lock()
        self.closed = False

    def start(self, specs: Iterable[Exec]) -> None:
        """Start every worker that is not running yet, without waiting for any of them.

        The interpreters start in parallel, so the first turn does not pay each start-up in series.
        """
        for spec in specs:
            try:
                self._get(spec)
            except WorkerFailure:
                # Reported by the first real call to that worker, with its context.
                continue

    def _get(self, spec: Exec) -> WorkerProcess:
        with self._lock:
            if self.closed:
                raise WorkerFailure("the worker pool is closed")
            worker = self._workers.get(spec.key)
            if worker is not None and not worker.broken and worker.process.poll() is None:
                return worker
            if worker is not None:
                self._workers.pop(spec.key, None)
                worker.kill()
            try:
                worker = WorkerProcess.spawn(
                    spec.argv, cwd=spec.cwd, env=self._env, stderr_limit=self._io_limit, name=worker_name(spec.argv)
                )
            except CallError as exc:
                raise WorkerFailure(str(exc)) from None
            self._workers[spec.key] = worker
            return worker

    def call(
        self, spec: Exec, event: str, data: dict[str, Any], context: Mapping[str, Any] | None = None
    ) -> dict[str, Any]:
        """One call under the deadline; on any failure the worker is evicted and killed."""
        worker = self._get(spec)
        try:
            return worker.call(event, data, context=context, timeout=self.deadline)
        except CallError as exc:
            self._evict(spec, worker)
            message = str(exc)
            if not isinstance(exc, ErrorFrame):
                tail = worker.stderr.tail(400)
                if tail and tail not in message:
                    message += f"; worker stderr: {tail}"
            raise WorkerFailure(message) from None

    def _evict(self, spec: Exec, worker: WorkerProcess) -> None:
        with self._lock:
            if self._workers.get(spec.key) is worker:
                del self._workers[spec.key]
        worker.kill()

    def running(self) -> list[WorkerProcess]:
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
