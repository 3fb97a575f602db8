"""An approval worker that reads approval.json's deny rules naively (a shell rule is a string prefix
of the whole command): ``i --runtime check approval`` must fail it on compound commands."""

from __future__ import annotations

import sys

from i_protocol import Worker

worker = Worker("approval", "0.0.1", dist_name="naive-rules-approval")


@worker.hook("tool_approval")
def tool_approval(data, request):
    command = str((data.get("arguments") or {}).get("command", ""))
    for rule in request.config().data.get("deny", []):
        if rule == data.get("name") or (
            data.get("name") == "shell" and rule.startswith("shell(") and command.startswith(rule[6:-3])
        ):
            data["decision"] = "deny"
    return data


if __name__ == "__main__":
    sys.exit(worker.main())
