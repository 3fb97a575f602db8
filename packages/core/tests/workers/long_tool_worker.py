"""A worker that declares ``progress``, ``problems`` and ``config_kind`` (as i-mcp does): a tool that
reports progress while it works, a ``tools_list`` answer with a problem, a configuration error."""

from __future__ import annotations

import sys
import time

from i_protocol import Worker
from i_protocol.errors import SettingsError

worker = Worker("long-tool", "0.0.1", dist_name="long-tool", extensions=("config_kind", "problems", "progress"))


@worker.tool("slow")
def slow(arguments: dict, request) -> dict:
    count, every = int(arguments.get("count", 3)), float(arguments.get("every", 0.3))
    for step in range(count):
        time.sleep(every)
        request.report_progress(f"step {step + 1}\x1b[2J", step + 1, count)
    return {"output": f"{count} steps"}


@worker.tool("misconfigured")
def misconfigured(arguments: dict, request) -> dict:
    raise SettingsError("/etc/long.json: field depth must be a number")


@worker.hook("tools_list")
def tools_list(data: dict, request) -> dict:
    problems = [{"server": "broken", "reason": "failed", "message": "server 'broken' exited", "stderr_tail": "no dir"}]
    return {**data, "tools": [], "problems": [*data.get("problems", []), *problems]}


if __name__ == "__main__":
    sys.exit(worker.main(sys.argv[1:]))
