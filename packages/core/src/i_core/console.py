"""The agent console (`i "task"`, `i` line mode). Filled in by the agent loop."""

from __future__ import annotations

import sys

from .errors import EXIT_USAGE


def run_console(argv: list[str]) -> int:
    """Placeholder until the agent loop lands: explains what is available."""
    print("i: the agent loop is not part of this build yet; see `i --runtime --help`", file=sys.stderr)
    return EXIT_USAGE
