"""The lifecycle events of the hook contract (owned by ``i_protocol.events``) and the built-in tool names.

``tools_list`` is sent once at start: a worker may announce tools it found at run time (MCP).
"""

from __future__ import annotations

from i_protocol.events import LIFECYCLE_EVENTS

EVENTS: tuple[str, ...] = LIFECYCLE_EVENTS
"""What a manifest entry may subscribe to (besides ``*``)."""

BUILTIN_TOOLS: tuple[str, ...] = ("read", "write", "edit", "glob", "search", "shell", "view_image", "recall")
