"""Several bundled workers in one process: `i --runtime worker approval,prompts,skills`.

A one-shot run needs prompts and skills before its first request; one interpreter instead of
three saves two start-ups on every `i "task"` (bench/oneshot.py). Each module stays its own
``Worker`` with its own handlers and its own config file (``approval.json``, ``prompts.json``,
...): ``Together`` only routes each frame to the module that handles its event, or for ``tool``
its tool name. The pool still sees one process per argv + cwd.

A frame does not say which module it is for, so modules that share a process must not share an
event or a tool (``executables.bundle`` groups only such modules; ``Together`` refuses others).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from i_protocol import Worker
from i_protocol.worker import TOOL_EVENT

from ..__about__ import __version__


class Together(Worker):
    """One serve loop for several workers, each frame answered by the worker it is for."""

    def __init__(self, workers: Sequence[Worker]) -> None:
        names = ",".join(worker.module for worker in workers)
        super().__init__(names, __version__, dist_name=f"i-core {names}")
        self._by_event: dict[str, Worker] = {}
        self._by_tool: dict[str, Worker] = {}
        for worker in workers:
            for event in worker.events:
                if event != TOOL_EVENT:
                    _claim(self._by_event, event, worker, "event")
            for tool in worker.tools:
                _claim(self._by_tool, tool, worker, "tool")

    @property
    def events(self) -> list[str]:
        """Every event one of the workers handles (``tool`` included when any has tools)."""
        return sorted(self._by_event) + ([TOOL_EVENT] if self._by_tool else [])

    @property
    def tools(self) -> list[str]:
        """Every tool one of the workers provides."""
        return sorted(self._by_tool)

    def handle(self, frame: dict[str, Any]) -> dict[str, Any]:
        """The owner's answer; a frame nobody owns gets the protocol's answer (unchanged data,
        an unknown tool, a malformed frame's error)."""
        owner = self._owner(frame)
        return owner.handle(frame) if owner is not None else super().handle(frame)

    def _owner(self, frame: dict[str, Any]) -> Worker | None:
        event = frame.get("event")
        if event == TOOL_EVENT:
            data = frame.get("data")
            name = data.get("name") if isinstance(data, dict) else None
            return self._by_tool.get(name) if isinstance(name, str) else None
        return self._by_event.get(event) if isinstance(event, str) else None


def _claim(owners: dict[str, Worker], key: str, worker: Worker, what: str) -> None:
    other = owners.setdefault(key, worker)
    if other is not worker:
        raise ValueError(
            f"bundled workers {other.module!r} and {worker.module!r} both handle {what} {key!r}, "
            "so they cannot share a process"
        )


def serve_together(workers: Sequence[Worker], argv: list[str]) -> int:
    """Serve ``workers`` in this process; ``--config`` belongs to one worker, so it is refused here."""
    names = ",".join(worker.module for worker in workers)
    if any(arg == "--config" or arg.startswith("--config=") for arg in argv):
        print(f"i: --config applies to one bundled worker, not to {names}", file=sys.stderr)
        return 2
    try:
        together = Together(workers)
    except ValueError as exc:
        print(f"i: {exc}", file=sys.stderr)
        return 2
    return together.main(argv)
