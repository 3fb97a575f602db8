"""The host side of the ``hello`` handshake (SPEC §3.4): who each worker process is, and whether
this core may use it.

At a worker process's first call the pool sends ``hello`` (``i_protocol.handshake``) before the
call itself: one round trip, whatever events the worker subscribes to, on a process the run
started anyway (no process is started only to be asked). A worker silent to ``hello`` (the data
returned unchanged) is unknown, protocol 1, no extensions, and never refused for that; when its
module slot expects one of our packages (``compatibility.OLDEST_WORKERS``), its ``PROGRAM
--version`` line is read instead, once, so a release from before the handshake is still judged.

A worker is refused (``WorkerIncompatible``, exit 6) when it declares a protocol this core does
not speak, or when its package and version are older than the oldest release this core works with
(docs/compatibility.md): one line naming the package, its version, the range needed and the fix.

Answers are kept like kept ``tools_list`` answers: in ``cache_dir/core/hello/<key>.json``, valid
while the program files of the worker's argv keep their stamps, so a later run neither asks again
nor starts ``--version``. A worker whose program cannot be stamped is asked at each run.
"""

from __future__ import annotations

import hashlib
import os
import shlex
import threading
from collections.abc import Mapping
from typing import Any

from i_protocol import PROTOCOL_VERSION, ErrorFrame
from i_protocol.atomic import atomic_write_bytes
from i_protocol.errors import FileError
from i_protocol.files import file_stamp, read_json
from i_protocol.handshake import EXTENSIONS, HELLO_EVENT, UNKNOWN, Hello, hello_request, parse_hello, speaks
from i_protocol.jsonsafe import dumps_safe

from . import preflight
from .__about__ import __version__
from .compatibility import OLDEST_WORKERS, extensions_of
from .errors import WorkerIncompatible
from .manifest import Exec
from .modules import MODULES
from .version_line import ask_version

__all__ = ["CORE_EXTENSIONS", "Handshakes", "KeptHellos", "expected_packages", "program_stamps", "refusal"]

CORE_EXTENSIONS = (
    "after_compact_commit",
    "after_compact_rounds",
    "chunks",
    "config_kind",
    "cut_estimates",
    "focus",
    "prepared",
    "previous_attempt",
    "problems",
    "progress",
    "provider_request",
    "rejection",
    "summary_request_overhead",
    "tool_output_budget",
    "tools_list",
    "turn_context",
    "undo",
    # Registered from the i-protocol release after 0.2.4 on; named only where the installed one knows them.
    *(name for name in ("plan_mode", "sandbox") if name in EXTENSIONS),
)
"""The extensions this core understands, named in the ``hello`` it sends."""

FORMAT = "i-hello/1"
_MAX_ENTRY_BYTES = 64 * 1024


def refusal(hello: Hello, module: str | None, command: str | None = None) -> str | None:
    """Why this core refuses a worker that said ``hello`` (None: it may be used), in one line."""
    who = f"worker {module}" if module else "worker"
    if command:
        who += f" ({command})"
    slot = f" for {module!r}" if module else ""
    if not speaks(hello):
        named = " ".join(part for part in (hello.package, hello.version) if part) or "no package named"
        return (
            f"{who} declares protocol {hello.protocol} ({named}), but i-core {__version__} speaks protocol "
            f"{PROTOCOL_VERSION}; fix: install a release of it that speaks protocol {PROTOCOL_VERSION}, "
            f"or bind another program{slot} in bindings.json"
        )
    oldest = OLDEST_WORKERS.get(hello.package or "")
    if oldest is None or hello.version is None or _at_least(hello.version, oldest):
        return None
    needed = f"{hello.package}>={oldest}"
    return (
        f"{who} is {hello.package} {hello.version}, but i-core {__version__} needs {needed} "
        f"(docs/compatibility.md); fix: pipx install '{needed}', or point bindings.json's entry{slot} at such a release"
    )


def _at_least(version: str, oldest: str) -> bool:
    return preflight.fits(version, f">={oldest}")


class KeptHellos:
    """What each worker program said (``hello``, or ``--version`` for a silent one), kept by its file stamps."""

    def __init__(self, cache_dir: str, environment: Mapping[str, str]) -> None:
        self.folder = os.path.join(cache_dir, "core", "hello")
        self._environment = sorted(environment.items())

    def path(self, spec: Exec) -> str:
        """Where the answer of ``spec``'s program is kept."""
        identity = [__version__, list(spec.argv), spec.cwd, list(spec.env), self._environment]
        return os.path.join(self.folder, hashlib.sha256(dumps_safe(identity)).hexdigest() + ".json")

    def load(self, spec: Exec) -> Hello | None:
        """The kept ``Hello`` while every program stamp still holds, else None."""
        try:
            entry = read_json(self.path(spec), _MAX_ENTRY_BYTES, what="kept hello answer", lossless=True)
        except (OSError, FileError, TypeError):
            return None
        if not isinstance(entry, dict) or entry.get("format") != FORMAT:
            return None
        stamps, said = entry.get("depends_on"), entry.get("hello")
        if not isinstance(stamps, list) or not stamps or not isinstance(said, dict):
            return None
        if any(not isinstance(s, dict) or file_stamp(str(s.get("path"))) != s for s in stamps):
            return None
        if not said.get("known"):  # silent to hello: what its --version line said, if anything
            package, version = said.get("package"), said.get("version")
            if isinstance(package, str) and isinstance(version, str):
                return Hello(package, version)
            return UNKNOWN
        return parse_hello({**said, "library": said.get("library") or ""})

    def store(self, spec: Exec, hello: Hello) -> None:
        """Keep ``hello`` until a program file of ``spec`` changes (not at all when none can be stamped)."""
        stamps = program_stamps(spec)
        if not stamps:
            return
        entry = {"format": FORMAT, "depends_on": stamps, "hello": hello.as_json()}
        try:
            atomic_write_bytes(self.path(spec), dumps_safe(entry), durable=False)
        except (OSError, TypeError):  # derived data: the next run asks again
            pass


def program_stamps(spec: Exec) -> list[dict[str, Any]]:
    """Stamps of the program files of ``spec``'s argv (the interpreter, a console script, a script);
    none for ``python -m PACKAGE`` of a package other than this core, whose files cannot be named."""
    argv = list(spec.argv)
    if "-m" in argv[1:] and argv[argv.index("-m") + 1 : argv.index("-m") + 2] != ["i_core"]:
        return []
    stamps = []
    for arg in argv:
        path = arg if os.path.isabs(arg) or spec.cwd is None else os.path.join(spec.cwd, arg)
        if os.path.isabs(path) and os.path.isfile(path):
            stamps.append(file_stamp(path))
    return stamps


class Handshakes:
    """The handshake of every worker process of one run, and what each said (``said``)."""

    def __init__(self, kept: KeptHellos | None = None, *, expected: Mapping[str, str] | None = None) -> None:
        self._kept = kept
        self._expected = dict(expected or {})
        """module -> the package its slot expects (``modules.MODULES``), for the ``--version`` fallback."""
        self._said: dict[tuple[tuple[str, ...], str], Hello] = {}
        self._lock = threading.Lock()

    def said(self, spec: Exec) -> Hello | None:
        """What the worker of ``spec`` said in this run (None: not greeted yet)."""
        with self._lock:
            return self._said.get(spec.key)

    def declared(self, spec: Exec, extension: str) -> bool:
        """True when the worker of ``spec`` declared ``extension`` in its ``hello`` (for a release of
        ours from before the declarations: when that release uses it, ``compatibility.extensions_of``)."""
        hello = self.said(spec)
        return hello is not None and extension in extensions_of(hello)

    def greet(self, spec: Exec, worker: Any, module: str | None, timeout: float) -> Hello:
        """The worker's ``Hello`` (kept, or asked now); a ``WorkerIncompatible`` when it is refused.

        ``worker`` is the started process (``HostedWorker``); a ``CallError`` other than an error
        frame propagates (the worker is broken); an error frame reads as silence.
        """
        hello = self._kept.load(spec) if self._kept is not None else None
        if hello is None:
            hello = self._ask(spec, worker, module, timeout)
            if self._kept is not None:
                self._kept.store(spec, hello)
        with self._lock:
            self._said[spec.key] = hello
        problem = refusal(hello, module, _command(spec))
        if problem is not None:
            raise WorkerIncompatible(problem + "; the last checkpoint is unchanged")
        return hello

    def _ask(self, spec: Exec, worker: Any, module: str | None, timeout: float) -> Hello:
        sent = hello_request("i-core", __version__, CORE_EXTENSIONS)
        try:
            hello = parse_hello(worker.call(HELLO_EVENT, sent, timeout=timeout), sent)
        except ErrorFrame:
            hello = UNKNOWN
        if hello.known or (module or "") not in self._expected:
            return hello
        return self.from_version_line(spec.argv, spec.cwd, self._expected[module or ""])

    @staticmethod
    def from_version_line(argv: tuple[str, ...] | list[str], cwd: str | None, package: str) -> Hello:
        """A silent worker in a slot that expects our ``package``: what its ``--version`` says
        (unknown when it says nothing readable, or names another package)."""
        answer = ask_version(list(argv), cwd)
        if answer.package != package or answer.version is None:
            return UNKNOWN
        return Hello(answer.package, answer.version)


def expected_packages() -> dict[str, str]:
    """module -> our package its slot expects, for the modules the compatibility table judges."""
    return {name: spec.package for name, spec in MODULES.items() if spec.package in OLDEST_WORKERS}


def _command(spec: Exec) -> str:
    return shlex.join(spec.argv)
