"""The lifecycle events of the hook contract (SPEC §3.4) and the built-in tool names.

``tools_list`` is sent once at start: a worker may announce tools it found at run time (MCP).
``undo`` is sent only by ``i --runtime undo`` and the console's ``/undo``, to the checkpoint module.
"""

from __future__ import annotations

EVENTS: tuple[str, ...] = (
    "session_load",
    "system_prompt",
    "user_input",
    "before_turn",
    "context_budget",
    "compact_plan",
    "before_compact",
    "after_compact",
    "before_compact_commit",
    "after_compact_commit",
    "before_request",
    "request_retry",
    "after_response",
    "before_tool",
    "tool_approval",
    "after_tool",
    "before_save",
    "after_save",
    "finish",
    "tools_list",
    "undo",
)

BUILTIN_TOOLS: tuple[str, ...] = ("read", "write", "edit", "glob", "search", "shell", "view_image", "recall")
