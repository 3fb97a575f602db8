"""The bundled `approval` worker: ``tool_approval`` policy from ``approval.json``.

``approval.json``: ``{"mode": "ask" | "auto", "deny_tools": ["shell", ...]}``. ``deny_tools``
always wins; ``auto`` allows what the core would otherwise ask about; ``ask`` keeps the core's
decision. The core still applies its own gate: an invalid answer or a failure never allows.
"""

from __future__ import annotations

from typing import Any

from i_protocol import Request, Worker, WorkerError
from i_protocol.errors import SettingsError
from i_protocol.settings import optional_choice, optional_str_list, reject_unknown

from ..__about__ import __version__

worker = Worker("approval", __version__, dist_name="i-core approval")


def _policy(request: Request) -> tuple[str, frozenset[str]]:
    config = request.config()
    where = config.path or "approval.json"
    try:
        reject_unknown(config.data, ("mode", "deny_tools"), file=where)
        mode = optional_choice(config.data, "mode", ("ask", "auto"), "ask", file=where)
        deny = optional_str_list(config.data, "deny_tools", [], file=where)
    except SettingsError as exc:
        raise WorkerError(str(exc)) from exc
    return mode, frozenset(deny)


@worker.hook("tool_approval")
def tool_approval(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Apply deny_tools, then the mode, to the decision the core proposes."""
    from i_protocol.events import DECISIONS  # the event types: at the first request, not at start

    mode, deny = _policy(request)
    decision = data.get("decision", "ask")
    if decision not in DECISIONS:
        raise WorkerError(f"tool_approval: decision must be one of {', '.join(DECISIONS)}, got {decision!r}")
    if data.get("name") in deny:
        decision = "deny"
    elif mode == "auto" and decision == "ask":
        decision = "allow"
    data["decision"] = decision
    return data
