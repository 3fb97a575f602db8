"""Console entry of `i`: the i-protocol check and ``--version`` first (``preflight``, standard library
only), then bundled workers are dispatched before anything else is imported."""

from __future__ import annotations

import sys
from typing import NoReturn

from . import preflight
from .__about__ import NEEDS_PROTOCOL, __version__

DIST = "i-core"
PROGRAM = "i"


def main(argv: list[str] | None = None) -> int:
    """Run `i` with ``argv`` (default: the process arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    if preflight.answer_version(DIST, __version__, NEEDS_PROTOCOL, __file__, args):
        return 0
    if args[:2] == ["--runtime", "worker"]:
        if len(args) < 3:
            print("usage: i --runtime worker NAME[,NAME...] [--config FILE (one NAME only)]", file=sys.stderr)
            return 2
        from .bundled import run

        return run(args[2], args[3:])
    from .cli import run_cli

    return run_cli(args)


def run() -> NoReturn:
    """The console script (and ``python -m i_core``): the i-protocol check (one line and exit 7 when
    it does not fit), ``main``, then exit without the interpreter's teardown (``i_protocol.exit_fast``:
    ~10 ms of a one-shot run, after everything is saved and closed)."""
    preflight.check(PROGRAM, DIST, __version__, NEEDS_PROTOCOL)
    try:
        from i_protocol import exit_fast
    except ImportError as exc:
        preflight.stop_on_import(PROGRAM, DIST, __version__, NEEDS_PROTOCOL, exc)
    exit_fast(main())


if __name__ == "__main__":
    run()
