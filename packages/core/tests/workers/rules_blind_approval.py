"""An approval worker that knows only ``deny_tools`` (no rules): the rules check must fail it."""

from __future__ import annotations

import sys

from i_protocol import Worker

worker = Worker("approval", "0.0.1", dist_name="rules-blind-approval")


@worker.hook("tool_approval")
def tool_approval(data, request):
    return data


if __name__ == "__main__":
    sys.exit(worker.main())
