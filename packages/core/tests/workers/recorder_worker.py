"""A test worker that appends every event it sees (name + data keys, and what ``parse_request`` finds
wrong with the data) to the file in argv[1].

With argv[2] == "context" it also reports a memory-like context in before_turn from the JSON
file argv[3] (so tests can change the reported entries between turns).
"""

from __future__ import annotations

import json
import sys

from i_protocol import Worker
from i_protocol.events import EventError, parse_request

log_path = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ""
worker = Worker("recorder", "0", dist_name="recorder")


@worker.hook("*")
def record(data: dict, request) -> dict:
    with open(log_path, "a", encoding="utf-8") as handle:
        entry = {
            "event": request.event,
            "keys": sorted(data),
            "data": _small(data),
            "problem": _problem(request.event, data),
        }
        if request.event == "before_turn" and data.get("messages"):
            entry["last_message"] = data["messages"][-1]
        handle.write(json.dumps(entry) + "\n")
    if mode == "context" and request.event == "before_turn":
        with open(sys.argv[3], encoding="utf-8") as handle:
            entries = json.load(handle)
        data = {**data, "context": {**data.get("context", {}), "memory": {"kind": "memory", "entries": entries}}}
    return data


def _problem(event: str, data: dict) -> str | None:
    """What is wrong with the data against the event's request type (``i_protocol.events``), if anything."""
    try:
        parse_request(event, data)
    except EventError as exc:
        return str(exc)
    return None


def _small(data: dict) -> dict:
    keep = {}
    for key in ("name", "arguments", "decision", "attempt", "reason", "request_meta", "output", "path", "external"):
        if key in data:
            keep[key] = data[key]
    return keep


if __name__ == "__main__":
    sys.exit(worker.main([]))
