"""The output of ``i --runtime check``: a table streamed row by row, or one JSON document."""

from __future__ import annotations

import sys
from typing import Any

from ..terminal_text import for_terminal
from .probe import Target
from .suite import Result

NAME_WIDTH = 58


def header(module: str, target: Target) -> str:
    """The first line: which module, which program, from where."""
    return f"check {module}: {' '.join(target.argv)} ({target.source}; cwd {target.cwd})"


def row(result: Result) -> str:
    """One check: PASS/FAIL, its name, and the detail or the reason."""
    return f"  {'PASS' if result.passed else 'FAIL'}  {result.name.ljust(NAME_WIDTH)}  {result.detail}"


def summary(results: list[Result]) -> str:
    """The last line: how many passed, and which failed."""
    failed = [r.name for r in results if not r.passed]
    line = f"{len(results)} checks: {len(results) - len(failed)} passed, {len(failed)} failed"
    return line + (f" ({'; '.join(failed)})" if failed else "")


def as_json(module: str, target: Target, results: list[Result]) -> dict[str, Any]:
    """The whole run as one JSON object (``--json``)."""
    return {
        "module": module,
        "exec": list(target.argv),
        "cwd": target.cwd,
        "source": target.source,
        "passed": all(r.passed for r in results),
        "checks": [
            {"name": r.name, "passed": r.passed, "detail": r.detail, "seconds": round(r.seconds, 3)} for r in results
        ],
    }


def stream_row(result: Result) -> None:
    """Print one row as soon as its check ends (a run takes seconds: show progress)."""
    sys.stdout.write(for_terminal(row(result)) + "\n")  # a worker's answer, shown, never obeyed
    sys.stdout.flush()
