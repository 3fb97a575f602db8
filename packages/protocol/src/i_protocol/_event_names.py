"""The event names of this i-protocol, without the types (``i_protocol.events`` is their public
home): what ``Worker.hook`` checks at registration, so a worker's start-up does not build the types."""

from __future__ import annotations

LIFECYCLE_EVENTS: tuple[str, ...] = (
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
"""The lifecycle events of the hook contract, in the order of a turn (a manifest subscribes to these)."""

PROTOCOL_EVENTS: tuple[str, ...] = ("hello", "tool", "provider_request")
"""Requests that are no lifecycle hook: the handshake, a tool call, a provider exchange."""

EVENTS: tuple[str, ...] = LIFECYCLE_EVENTS + PROTOCOL_EVENTS
"""Every event name a host of this i-protocol sends."""

DECISIONS: tuple[str, ...] = ("allow", "ask", "deny")
"""The answers of ``tool_approval``; anything else denies."""

ANY_EVENT = "*"
"""``Worker.hook("*")``: the handler of every event without its own."""


def is_event(name: str) -> bool:
    """Whether ``name`` is an event of this i-protocol (``*`` is no event: it stands for all)."""
    return name in EVENTS
