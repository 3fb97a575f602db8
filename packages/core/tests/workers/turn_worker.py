"""A test checkpoint worker: logs the tool events it gets (argv[1]), answers a notice on
``before_tool`` and a fixed ``undo``; declares turn_context and undo unless argv[2] == "silent"."""

from __future__ import annotations

import json
import sys

from i_protocol import Worker

log_path = sys.argv[1]
silent = len(sys.argv) > 2 and sys.argv[2] == "silent"
worker = Worker("turns", "0", dist_name="turns", extensions=() if silent else ("turn_context", "undo"))


@worker.hook("before_tool", "after_tool")
def record(data: dict, request) -> dict:
    with open(log_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": request.event, "data": data}) + "\n")
    if request.event == "before_tool" and "turn" in data:
        return {**data, "notice": f"fake: turn {data['turn']} is noted"}
    return data


@worker.hook("undo")
def undo(data: dict, request) -> dict:
    with open(log_path, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"event": "undo", "data": data}) + "\n")
    return {**data, "turns": [data["turn"]], "files": [], "not_undoable": ["fake"], "applied": not data["dry_run"]}


if __name__ == "__main__":
    sys.exit(worker.main([]))
