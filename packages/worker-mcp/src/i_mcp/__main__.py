"""Console entry of `i-mcp`."""

from __future__ import annotations

import sys

from .worker import worker


def main(argv: list[str] | None = None) -> int:
    """Run the worker (or answer --version/--help)."""
    return worker.main(argv)


if __name__ == "__main__":
    sys.exit(main())
