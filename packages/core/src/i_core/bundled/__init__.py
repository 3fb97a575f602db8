"""Modules bundled in the core, each run as its own process by `i --runtime worker NAME`."""

from __future__ import annotations

BUNDLED = ("approval", "prompts", "skills", "steering")


def run(name: str, argv: list[str]) -> int:
    """Serve the bundled worker ``name``; an unknown name is a usage error."""
    if name == "approval":
        from .approval import worker
    elif name == "prompts":
        from .prompts import worker
    elif name == "skills":
        from .skills import worker
    elif name == "steering":
        from .steering import main

        return main(argv)
    else:
        import sys

        print(f"i: unknown bundled worker {name!r}; bundled workers: {', '.join(BUNDLED)}", file=sys.stderr)
        return 2
    return worker.main(argv)
