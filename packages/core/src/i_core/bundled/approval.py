"""The bundled `approval` worker: ``tool_approval`` policy from ``approval.json``.

``approval.json``: ``{"mode": "ask" | "auto", "deny_tools": ["shell", ...]}``. ``deny_tools``
always wins; ``auto`` allows what the core would otherwise ask about; ``ask`` keeps the core's
decision. The core still applies its own gate: an invalid answer or a failure never allows.
"""

from __future__ import annotations

from typing import Any

from i_protocol import Request, Worker, WorkerError

from ..__about__ import __version__

worker = Worker("approval", __version__, dist_name="i-core approval")

_DECISIONS = ("allow", "ask", "deny")


def _policy(request: Request) -> tuple[str, frozenset[str]]:
    config = request.config()
    where = config.path or "approval.json"
    unknown = sorted(set(config.data) - {"mode", "deny_tools"})
    if unknown:
        raise WorkerError(f"{where}: unknown field(s): {', '.join(unknown)}")
    mode = config.data.get("mode", "ask")
    if mode not in ("ask", "auto"):
        raise WorkerError(f'{where}: mode must be "ask" or "auto", got {mode!r}')
    deny = config.data.get("deny_tools", [])
    if not isinstance(deny, list) or not all(isinstance(name, str) for name in deny):
        raise WorkerError(f"{where}: deny_tools must be an array of tool names")
    return mode, frozenset(deny)


@worker.hook("tool_approval")
def tool_approval(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Apply deny_tools, then the mode, to the decision the core proposes."""
    mode, deny = _policy(request)
    decision = data.get("decision", "ask")
    if decision not in _DECISIONS:
        raise WorkerError(f"tool_approval: decision must be one of {', '.join(_DECISIONS)}, got {decision!r}")
    if data.get("name") in deny:
        decision = "deny"
    elif mode == "auto" and decision == "ask":
        decision = "allow"
    data["decision"] = decision
    return data
