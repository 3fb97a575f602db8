"""What this package's console script does before anything else: check that the installed
i-protocol is one this package works with, and answer ``--version``.

It must run when i-protocol is missing, too old, or another build of the same version, so it
uses the standard library, this package's ``__about__`` and i-protocol's ``__about__`` only.
When i-protocol does not fit, the program ends with one line on stderr naming the installed and
the needed versions, and exit code ``EXIT_PROTOCOL`` (7). The needed range is ``NEEDS_PROTOCOL``
in ``__about__.py``, which equals pyproject's ``i-protocol`` requirement (scripts/check-releases
and a test compare them).

This file is the same in every package with a console script (tests/e2e/test_releases.py
compares the copies); it cannot live in i-protocol, whose version is what it checks.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable
from typing import Any, NoReturn, Protocol

EXIT_PROTOCOL = 7
"""Exit code: the installed i-protocol is missing, outside the needed range, or another build."""

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*([0-9][0-9.]*)\s*$")


def version_key(version: str) -> tuple[int, ...]:
    """``0.2.10`` -> (0, 2, 10); a suffix (``0.3.0rc1``) counts as its numeric release."""
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def fits(version: str, needs: str) -> bool:
    """Whether ``version`` satisfies ``needs`` (``>=0.2.2,<0.3``: comparisons joined by commas)."""
    have = version_key(version)
    for clause in filter(None, needs.split(",")):
        match = _CLAUSE.match(clause)
        if match is None:
            return False
        op, want = match[1], version_key(match[2])
        width = max(len(have), len(want))
        a, b = have + (0,) * (width - len(have)), want + (0,) * (width - len(want))
        ok = {">=": a >= b, "<=": a <= b, "==": a == b, "!=": a != b, ">": a > b, "<": a < b}[op]
        if not ok:
            return False
    return True


def protocol_problem(dist: str, version: str, needs: str) -> str | None:
    """Why the installed i-protocol does not fit ``needs`` (one line), None when it fits."""
    fix = f"fix: {sys.executable} -m pip install 'i-protocol{needs}'"
    try:
        from i_protocol.__about__ import __version__ as installed
    except ImportError as exc:
        found = _distribution_version("i-protocol")
        if found is None:
            return f"{dist} {version} needs i-protocol{needs}, which is not installed here; {fix}"
        broken = f"the installed i-protocol {found} cannot be imported ({exc})"
        return f"{dist} {version} needs i-protocol{needs}; {broken}; {fix}"
    if fits(installed, needs):
        return None
    return f"{dist} {version} needs i-protocol{needs}, but i-protocol {installed} is installed; {fix}"


def check(program: str, dist: str, version: str, needs: str) -> None:
    """End the process (one line, exit 7) unless the installed i-protocol fits ``needs``."""
    problem = protocol_problem(dist, version, needs)
    if problem is not None:
        stop(program, problem)


def stop(program: str, problem: str) -> NoReturn:
    """One line on stderr, exit code 7, no traceback."""
    sys.stderr.write(f"{program}: {problem}\n")
    sys.stderr.flush()
    raise SystemExit(EXIT_PROTOCOL)


def stop_on_import(program: str, dist: str, version: str, needs: str, exc: ImportError) -> NoReturn:
    """After the version fitted, an import from i_protocol failed: end with ``another_build``'s line.
    Anything else is re-raised."""
    problem = another_build(dist, version, needs, exc)
    if problem is None:
        raise exc
    stop(program, problem)


class Runnable(Protocol):
    """What ``worker`` returns: an ``i_protocol.Worker`` (this module cannot import it)."""

    def run(self, argv: list[str] | None = None, *, version: Callable[[list[str]], bool] | None = None) -> NoReturn:
        """Answer ``--version`` or serve, then exit."""


def worker(program: str, dist: str, version: str, needs: str, package_file: str) -> Runnable:
    """A worker package's ``Worker`` (``<package>.worker.worker``, ``package_file`` its ``__main__``),
    imported once ``check`` passed. An import that fails because another build of i-protocol is
    installed, or an i-protocol whose ``Worker`` cannot ``run``, ends with ``another_build``'s line."""
    import importlib

    package = os.path.basename(os.path.dirname(os.path.abspath(package_file)))
    try:
        found: Runnable = importlib.import_module(f"{package}.worker").worker
    except ImportError as exc:
        stop_on_import(program, dist, version, needs, exc)
    if not callable(getattr(found, "run", None)):
        missing = ImportError("cannot import name 'Worker.run' from 'i_protocol'", name="i_protocol")
        stop_on_import(program, dist, version, needs, missing)
    return found


def version_answer(dist: str, version: str, needs: str, package_file: str) -> Callable[[list[str]], bool]:
    """``answer_version`` for this package, as ``Worker.run`` asks it (``--version`` and ``--json``)."""
    return lambda argv: answer_version(dist, version, needs, package_file, argv)


def another_build(dist: str, version: str, needs: str, exc: ImportError) -> str | None:
    """The one line for an import from i_protocol that failed although its version fitted: another
    build of that version is installed (one version named several builds before 0.2.3); None when
    ``exc`` is not about i_protocol."""
    if "i_protocol" not in f"{exc.name} {exc}":
        return None
    try:
        from i_protocol.__about__ import __version__ as installed
    except ImportError:
        installed = "?"
    what = re.sub(r" \(/[^)]*\)$", "", str(exc))
    return (
        f"{dist} {version} needs i-protocol{needs} as released, but the installed i-protocol {installed} is "
        f"another build ({what}); fix: {sys.executable} -m pip install --force-reinstall 'i-protocol{needs}'"
    )


def version_document(dist: str, version: str, needs: str, package_file: str) -> dict[str, Any]:
    """What ``--version --json`` prints: this package, its build, and the i-protocol it runs on."""
    import i_protocol.__about__ as about

    return {
        "package": dist,
        "version": version,
        "protocol": about.PROTOCOL_VERSION,
        "build": source_tree(os.path.dirname(package_file)),
        "needs": f"i-protocol{needs}",
        "library": {
            "package": "i-protocol",
            "version": about.__version__,
            "build": source_tree(os.path.dirname(about.__file__ or "")),
        },
    }


def answer_version(dist: str, version: str, needs: str, package_file: str, argv: list[str]) -> bool:
    """Print ``--version``'s answer when ``argv`` asks for it; whether it did.

    Line 1 stays ``<dist> <version> (i-protocol <N>)`` (cores parse it); line 2 names this build,
    the i-protocol version and build it runs on, and what it needs. ``--version --json``: one object.
    """
    if argv[:1] != ["--version"]:
        return False
    doc = version_document(dist, version, needs, package_file)
    if "--json" in argv[1:]:
        import json

        print(json.dumps(doc, sort_keys=True))
        return True
    library = doc["library"]
    print(f"{dist} {version} (i-protocol {doc['protocol']})")
    print(
        f"build {_short(doc['build'])}; i-protocol {library['version']} build {_short(library['build'])}; "
        f"needs i-protocol{needs}"
    )
    return True


def source_tree(package_dir: str) -> str | None:
    """The git tree hash the installed package folder would have as ``packages/<pkg>/src`` (whose
    one entry is the import package): equal to the CHANGELOG's ``tree`` for a released build.
    None when the folder cannot be read."""
    import hashlib

    def obj(kind: bytes, body: bytes) -> bytes:
        return hashlib.sha1(kind + b" " + str(len(body)).encode() + b"\0" + body).digest()

    def tree(path: str) -> bytes | None:
        entries = []
        for entry in os.scandir(path):
            if entry.name == "__pycache__":
                continue
            if entry.is_dir(follow_symlinks=False):
                sub = tree(entry.path)
                if sub is not None:  # git keeps no empty folder
                    entries.append((entry.name.encode() + b"/", b"40000 " + entry.name.encode() + b"\0" + sub))
            elif entry.is_file(follow_symlinks=False):
                with open(entry.path, "rb") as handle:
                    blob = obj(b"blob", handle.read())
                mode = b"100755" if os.access(entry.path, os.X_OK) else b"100644"
                entries.append((entry.name.encode(), mode + b" " + entry.name.encode() + b"\0" + blob))
        if not entries:
            return None
        return obj(b"tree", b"".join(line for _, line in sorted(entries)))

    try:
        inner = tree(package_dir)
    except OSError:
        return None
    if inner is None:
        return None
    name = os.path.basename(os.path.normpath(package_dir)).encode()
    return obj(b"tree", b"40000 " + name + b"\0" + inner).hex()


def _short(build: str | None) -> str:
    return build[:12] if build else "unknown"


def _distribution_version(name: str) -> str | None:
    """The installed distribution's version from its metadata (the error path only: it is slow)."""
    from importlib import metadata

    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
