"""The approval gate: whether one tool call may run, and the refusal the model gets when not.

Order of authority (SPEC §3.4): plan mode refuses ``write``, ``edit`` and ``shell`` at once (the
offered tools stay the same, so the prompt prefix stays valid); the user's "deny for this session"
refuses; the core proposes a default (``allow`` for free built-in tools or under ``--yolo``, else
``ask``; in plan mode an MCP tool is proposed ``ask`` whatever else holds), which the user's "allow
for this session" turns into ``allow``; the ``tool_approval`` policy worker then has the last word
(its rules, ``rules``; a failure or an answer other than allow/ask/deny denies); ``ask`` prompts
the user, or refuses when the run is non-interactive. The answer of a ``shell`` call may carry a
``sandbox`` the call must run in (``sandbox``); the gate hands it to the tool.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from i_protocol import ProtocolError

from .errors import WorkerFailure
from .hooks import HookRunner
from .rules import Rules, parse_rules, save_allow_rules, suggested_rules

PLAN_REFUSED = frozenset({"write", "edit", "shell"})
"""The built-in tools plan mode refuses (they change files or run commands)."""


class ApprovalGate:
    """Decides tool calls for one session and remembers the user's per-session rules."""

    def __init__(
        self,
        hooks: HookRunner,
        ask: Callable[..., bool | str] | None,
        preview: Callable[[Any], str | None] | None,
        *,
        workspace: str = ".",
        state_dir: Path | None = None,
        offer_save: Callable[[list[str]], bool] | None = None,
        notice: Callable[[str], None] = lambda _line: None,
    ) -> None:
        self.hooks = hooks
        # ask(summary, preview): True/"y" runs the tool, "a" runs it and allows it for the rest of
        # the session, "d" denies it for the session, anything else declines. None: non-interactive.
        self.ask = ask
        self.preview = preview
        self.workspace = workspace
        self.state_dir = state_dir
        """``data_dir/workspaces/<id>/``: where "always" saves allow rules (never the project)."""
        self.offer_save = offer_save
        """Asks the user whether to save these allow rules for the workspace (None: never offered)."""
        self.notice = notice
        self.plan = False
        """Plan mode: write, edit and shell are refused, MCP tools ask."""
        self.session_rules: dict[str, str] = {}
        """Tool name -> ``allow`` | ``deny``: the user's "a" / "d" answers."""
        self.session_allows: list[str] = []
        """Shell allow rules from "always" (``shell(git status:*)``), for this session."""
        self.session_commands: set[str] = set()
        """Shell commands allowed exactly, for this session (an "always" no rule can express)."""
        self.sandbox: dict[str, Any] | None = None
        """The sandbox the last allowed call must run in (a shell call's policy answer), else None."""

    def decide(
        self, name: str, arguments: dict[str, Any], external: bool, default: str, summary: str, prepared: Any = None
    ) -> str | None:
        """None to run the call, or the refusal text the model gets as the tool's result."""
        self.sandbox = None
        if self.plan and name in PLAN_REFUSED and not external:
            return (
                f"not run: the session is in plan mode, where {name} is refused; investigate with read, "
                "glob and search, then present your plan; the user leaves plan mode with /act"
            )
        rule = self.session_rules.get(name)
        if rule == "deny":
            return f"the user denied {name} for this session; it was not run"
        if default == "ask" and (rule == "allow" or self._session_allows(name, arguments)):
            default = "allow"
        data = {"name": name, "arguments": arguments, "external": external, "decision": default}
        if self.plan:
            data["plan"] = True
            if name.startswith("mcp__"):
                data["decision"] = "ask"
        try:
            decision = self.hooks.checked("tool_approval", data)
        except WorkerFailure as exc:  # a failed policy, or an answer other than allow/ask/deny
            return f"denied: the approval policy failed ({exc}); nothing was run"
        if decision == "deny":
            return f"denied by the approval policy: {name} was not run"
        if decision == "ask":
            refusal = self._ask_user(name, arguments, summary, prepared)
            if refusal is not None:
                return refusal
        self.sandbox = getattr(decision, "sandbox", None)
        return None

    def _session_allows(self, name: str, arguments: dict[str, Any]) -> bool:
        if name != "shell" or self.plan:
            return False
        command = arguments.get("command")
        if not isinstance(command, str):
            return False
        if command in self.session_commands:
            return True
        if not self.session_allows:
            return False
        rules = Rules(allow=parse_rules(self.session_allows, self.workspace))
        return rules.decide(name, arguments, self.workspace) == "allow"

    def _ask_user(self, name: str, arguments: dict[str, Any], summary: str, prepared: Any) -> str | None:
        if self.ask is None:
            return (
                f"not run: {name} needs the user's approval and this run is non-interactive; the user can "
                "rerun with --yolo or allow the tool in approval.json"
            )
        detail = self.preview(prepared) if self.preview is not None and prepared is not None else None
        reply = self.ask(summary, detail)
        if reply == "a" and name == "shell" and isinstance(arguments.get("command"), str):
            self._always_shell(arguments["command"])
        elif reply in ("a", "d"):
            self.session_rules[name] = "allow" if reply == "a" else "deny"
        if reply is True or reply in ("y", "a"):
            return None
        return f"the user declined {name}; it was not run"

    def _always_shell(self, command: str) -> None:
        """ "Always" for a shell command: its prefix rules for the session, offered for saving."""
        rules = suggested_rules(command, self.workspace)
        if not rules:
            self.session_commands.add(command)
            return
        self.session_allows.extend(rule for rule in rules if rule not in self.session_allows)
        if self.offer_save is None or self.state_dir is None or not self.offer_save(rules):
            return
        try:
            where = save_allow_rules(self.state_dir, rules)
        except (OSError, ProtocolError) as exc:
            self.notice(f"the allow rule(s) were not saved: {exc}")
            return
        self.notice(f"saved {', '.join(rules)} in {where}")
