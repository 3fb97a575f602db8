"""Console entry of `i-compact`."""

from __future__ import annotations

from typing import NoReturn

from i_protocol import exit_fast

from .worker import worker


def main(argv: list[str] | None = None) -> int:
    """Run the worker (or answer --version/--help)."""
    return worker.main(argv)


def run() -> NoReturn:
    """The console script: ``main``, then exit without the interpreter's teardown (``exit_fast``)."""
    exit_fast(main())


if __name__ == "__main__":
    run()
