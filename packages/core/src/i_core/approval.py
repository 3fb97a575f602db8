"""The approval gate: whether one tool call may run, and the refusal the model gets when not.

Order of authority (SPEC §3.4): the user's "deny for this session" refuses at once; the core
proposes a default (``allow`` for free built-in tools or under ``--yolo``, else ``ask``), which
the user's "allow for this session" turns into ``allow``; the ``tool_approval`` policy worker
then has the last word (a failure or an answer other than allow/ask/deny denies); ``ask``
prompts the user, or refuses when the run is non-interactive.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .errors import WorkerFailure
from .hooks import HookRunner


class ApprovalGate:
    """Decides tool calls for one session and remembers the user's per-session rules."""

    def __init__(
        self,
        hooks: HookRunner,
        ask: Callable[..., bool | str] | None,
        preview: Callable[[Any], str | None] | None,
    ) -> None:
        self.hooks = hooks
        # ask(summary, preview): True/"y" runs the tool, "a" runs it and allows it for the rest of
        # the session, "d" denies it for the session, anything else declines. None: non-interactive.
        self.ask = ask
        self.preview = preview
        self.session_rules: dict[str, str] = {}
        """Tool name -> ``allow`` | ``deny``: the user's "a" / "d" answers."""

    def decide(
        self, name: str, arguments: dict[str, Any], external: bool, default: str, summary: str, prepared: Any = None
    ) -> str | None:
        """None to run the call, or the refusal text the model gets as the tool's result."""
        rule = self.session_rules.get(name)
        if rule == "deny":
            return f"the user denied {name} for this session; it was not run"
        if rule == "allow" and default == "ask":
            default = "allow"
        try:
            decision = self.hooks.checked(
                "tool_approval", {"name": name, "arguments": arguments, "external": external, "decision": default}
            )
        except WorkerFailure as exc:  # a failed policy, or an answer other than allow/ask/deny
            return f"denied: the approval policy failed ({exc}); nothing was run"
        if decision == "allow":
            return None
        if decision == "deny":
            return f"denied by the approval policy: {name} was not run"
        return self._ask_user(name, summary, prepared)

    def _ask_user(self, name: str, summary: str, prepared: Any) -> str | None:
        if self.ask is None:
            return (
                f"not run: {name} needs the user's approval and this run is non-interactive; the user can "
                "rerun with --yolo or allow the tool in approval.json"
            )
        detail = self.preview(prepared) if self.preview is not None and prepared is not None else None
        reply = self.ask(summary, detail)
        if reply in ("a", "d"):
            self.session_rules[name] = "allow" if reply == "a" else "deny"
        if reply is True or reply in ("y", "a"):
            return None
        return f"the user declined {name}; it was not run"
