"""``i --runtime check MODULE``: the contract suite for any implementation of a module.

The framing checks (``framing``) hold for every worker; each module then has its own invariants
(``budget``, ``compact``, ``cache``, ``memory``, ``web``, ``mcp``, ``bundled``). Answers are judged by the
core's own rules (``hook_results.CHECKS``, ``i_protocol.history``, ``i_protocol.budget``) through
the core's own host (``i_protocol.host``), so a worker that passes here behaves in a session.
Exit 0 only when every check passes, so a CI job can gate a version pin on it.
"""

from __future__ import annotations

import sys

from i_protocol.jsonsafe import dumps_safe

from ..errors import EXIT_WORKER
from ..terminal_text import for_terminal
from . import report
from .probe import Target
from .suite import Result, checks_of, resolve_target, run_checks

__all__ = ["Result", "Target", "checks_of", "resolve_target", "run_checks", "run_command"]


def run_command(module: str, *, exec_argv: list[str] | None, cwd: str | None, json: bool) -> int:
    """Run the suite and print it (a table, or JSON with ``json``); 0 when all pass, else 6."""

    def start(target: Target) -> None:
        if not json:
            print(for_terminal(report.header(module, target)), flush=True)

    target, results = run_checks(
        module, exec_argv=exec_argv, cwd=cwd, on_start=start, on_result=None if json else report.stream_row
    )
    if json:
        sys.stdout.write(dumps_safe(report.as_json(module, target, results), indent=True).decode() + "\n")
    else:
        print(for_terminal(report.summary(results)))
    return 0 if all(r.passed for r in results) else EXIT_WORKER
