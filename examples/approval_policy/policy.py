"""A ``tool_approval`` policy hook: deny destructive shell commands, allow read-only ones, and
leave everything else to the core's decision (the core still asks the user for those).

The core's own gate stays in force: an invalid answer or a crash here never allows a call.
"""

import re
import sys

from i_protocol import Worker

worker = Worker("approval-policy", "1.0.0", dist_name="approval-policy")

DENY = re.compile(r"\brm\s+-[a-z]*r[a-z]*f|\bmkfs\b|\bdd\s+if=|>\s*/dev/sd")
READ_ONLY = re.compile(r"^\s*(ls|pwd|cat|head|tail|wc|git (status|diff|log))(\s|$)")


@worker.hook("tool_approval")
def tool_approval(data, request):
    """Return the complete data with ``decision`` set: deny, allow, or the core's proposal."""
    if data.get("name") == "shell":
        command = str((data.get("arguments") or {}).get("command", ""))
        if DENY.search(command):
            data["decision"] = "deny"
        elif READ_ONLY.match(command) and not re.search(r"[;&|`$<>]", command):
            data["decision"] = "allow"
    return data


if __name__ == "__main__":
    sys.exit(worker.main())
