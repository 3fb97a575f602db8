"""Console entry of `i-checkpoint`: the i-protocol check and ``--version`` first (``preflight``), then the worker."""

from __future__ import annotations

import sys
from typing import NoReturn

from . import preflight
from .__about__ import NEEDS_PROTOCOL, __version__

DIST = "i-worker-checkpoint"
PROGRAM = "i-checkpoint"


def main(argv: list[str] | None = None) -> int:
    """Run the worker (or answer --version/--help)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if preflight.answer_version(DIST, __version__, NEEDS_PROTOCOL, __file__, args):
        return 0
    from .worker import worker

    return worker.main(args)


def run() -> NoReturn:
    """The console script: the i-protocol check (one line and exit 7 when it does not fit), ``main``,
    then exit without the interpreter's teardown (``exit_fast``)."""
    preflight.check(PROGRAM, DIST, __version__, NEEDS_PROTOCOL)
    try:
        from i_protocol import exit_fast

        from . import worker as _worker  # noqa: F401  (an import error here: another i-protocol build)
    except ImportError as exc:
        preflight.stop_on_import(PROGRAM, DIST, __version__, NEEDS_PROTOCOL, exc)
    exit_fast(main())


if __name__ == "__main__":
    run()
