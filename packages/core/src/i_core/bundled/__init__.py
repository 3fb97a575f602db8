"""Modules bundled in the core, run by `i --runtime worker NAME`, or several in one process by
`i --runtime worker approval,prompts,skills` (``together``): one interpreter start instead of three."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from i_protocol import Worker

BUNDLED = ("approval", "prompts", "skills", "responses", "smoke", "steering")


def run(names: str, argv: list[str]) -> int:
    """Serve the bundled worker ``names``, or each worker of a comma-separated list in one process;
    an unknown name is a usage error."""
    listed = names.split(",")
    if listed == ["steering"]:  # alone only: it needs its --queue
        from .steering import main

        return main(argv)
    if listed == ["smoke"]:  # alone, it takes --output-cap; in a bundle it keeps the default cap
        from .smoke import main as smoke_main

        return smoke_main(argv)
    workers: list[Worker] = []
    for name in listed:
        worker = _worker(name)
        if worker is None:
            import sys

            if name == "steering":
                print("i: bundled worker 'steering' runs alone (it needs --queue)", file=sys.stderr)
            else:
                print(f"i: unknown bundled worker {name!r}; bundled workers: {', '.join(BUNDLED)}", file=sys.stderr)
            return 2
        workers.append(worker)
    if len(workers) == 1:
        return workers[0].main(argv)
    from .together import serve_together

    return serve_together(workers, argv)


def _worker(name: str) -> Worker | None:
    """The ``Worker`` of the bundled module ``name`` (one branch each); None for an unknown name."""
    if name == "approval":
        from .approval import worker
    elif name == "prompts":
        from .prompts import worker
    elif name == "skills":
        from .skills import worker
    elif name == "responses":
        from .responses import worker
    elif name == "smoke":
        from .smoke import worker
    else:
        return None
    return worker
