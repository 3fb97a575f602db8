"""The child process of the deadline's fallback (``deadline.py``): one tool call from stdin, its
result on stdout as JSON.

On POSIX the child's main thread stops the call at the deadline itself (so its message says where it
stopped); the parent kills the child when the deadline plus its start-up has passed.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import ToolError
from .contract import ToolContext
from .deadline import in_child
from .dispatch import execute, prepare


def child_main() -> int:
    """Run the call read from stdin with the child's runner (``deadline.in_child``); 0."""
    request = json.loads(sys.stdin.buffer.read())
    ctx = ToolContext(
        request["workspace"], max_output_chars=request["max_output_chars"], pattern_deadline=request["pattern_deadline"]
    )
    try:
        result = execute(prepare(request["tool"], request["arguments"], ctx, within=in_child), ctx)
        answer: dict[str, Any] = {"output": result.output, "is_error": result.is_error}
    except ToolError as exc:
        answer = {"error": str(exc)}
    sys.stdout.write(json.dumps(answer))
    return 0
