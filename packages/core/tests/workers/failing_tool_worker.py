"""A tool worker whose one tool reports failure as a result (``is_error``), as i-mcp does."""

from __future__ import annotations

import sys

from i_protocol import Worker

worker = Worker("failing-tool", "0.0.1", dist_name="failing-tool")


@worker.tool("lookup")
def lookup(arguments: dict, request) -> dict:
    return {"output": f"no such record: {arguments.get('key')}", "is_error": True}


if __name__ == "__main__":
    sys.exit(worker.main(sys.argv[1:]))
