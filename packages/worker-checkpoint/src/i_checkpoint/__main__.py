"""Console entry of `i-checkpoint`: the i-protocol check first (``preflight``), then ``Worker.run``."""

from __future__ import annotations

from typing import NoReturn

from . import preflight
from .__about__ import NEEDS_PROTOCOL, __version__

DIST = "i-worker-checkpoint"
PROGRAM = "i-checkpoint"


def run() -> NoReturn:
    """The console script: one line and exit 7 unless the installed i-protocol fits, then the worker."""
    preflight.check(PROGRAM, DIST, __version__, NEEDS_PROTOCOL)
    preflight.worker(PROGRAM, DIST, __version__, NEEDS_PROTOCOL, __file__).run(
        version=preflight.version_answer(DIST, __version__, NEEDS_PROTOCOL, __file__)
    )


if __name__ == "__main__":
    run()
