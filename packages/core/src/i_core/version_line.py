"""What a worker program says to ``PROGRAM --version``: ``"<dist> <version> (i-protocol <N>)"``, and
ours a second line ``build <tree>; i-protocol <version> build <tree>; needs i-protocol<range>``.

Asked by ``i --runtime versions`` and by the handshake of a worker silent to ``hello``.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass

from . import preflight

__all__ = ["VERSION_TIMEOUT_S", "VersionAnswer", "ask_version", "parse_version_line"]

VERSION_TIMEOUT_S = 3.0
_VERSION_LINE = re.compile(r"^(?P<package>\S(?:.*\S)?) (?P<version>\S+) \(i-protocol (?P<protocol>[^)\s]+)\)$")
_BUILD_LINE = re.compile(r"^build (?P<build>[^\s;]+); i-protocol (?P<library>[^\s;]+) build (?P<library_build>[^\s;]+)")
EXIT_PROTOCOL = preflight.EXIT_PROTOCOL


@dataclass(frozen=True)
class VersionAnswer:
    """What ``PROGRAM --version`` said."""

    package: str | None = None
    version: str | None = None
    protocol: str | None = None
    problem: str | None = None
    library: str | None = None
    build: str | None = None
    library_build: str | None = None
    too_old: bool = False
    """The program stopped because the i-protocol it runs on does not fit (exit 7)."""


def parse_version_line(line: str) -> tuple[str, str, str] | None:
    """(package, version, protocol) of a worker's ``--version`` line, None when it is not one."""
    match = _VERSION_LINE.match(line.strip())
    return (match["package"], match["version"], match["protocol"]) if match else None


def ask_version(argv: list[str], cwd: str | None = None) -> VersionAnswer:
    """Run ``argv --version`` and read its answer."""
    try:
        done = subprocess.run(
            [*argv, "--version"],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=VERSION_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        return VersionAnswer(problem=f"--version did not answer within {VERSION_TIMEOUT_S:g} s")
    except OSError as exc:
        return VersionAnswer(problem=f"cannot run: {exc.strerror or exc}")
    lines = done.stdout.strip().splitlines()
    if done.returncode == EXIT_PROTOCOL and done.stderr.strip():
        # Our console scripts' i-protocol check: one line naming the installed and the needed versions.
        return VersionAnswer(problem=done.stderr.strip().splitlines()[-1][:300], too_old=True)
    parsed = parse_version_line(lines[0]) if done.returncode == 0 and lines else None
    if parsed is None:
        line = lines[0] if lines else ""
        expected = "'<dist> <version> (i-protocol <N>)'"
        return VersionAnswer(problem=f"--version answered {line[:80]!r} (exit {done.returncode}), not {expected}")
    build = _BUILD_LINE.match(lines[1]) if len(lines) > 1 else None
    if build is None:
        return VersionAnswer(*parsed)
    return VersionAnswer(*parsed, None, build["library"], build["build"], build["library_build"])
