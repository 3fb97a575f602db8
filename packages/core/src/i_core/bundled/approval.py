"""The bundled `approval` worker: ``tool_approval`` policy from ``approval.json``.

``config_dir/approval.json`` (every field optional)::

    {"mode": "ask" | "auto", "deny_tools": ["shell"],
     "allow": ["shell(git status)", "shell(npm test:*)", "write(src/**)"],
     "ask": ["read(~/.ssh/**)"], "deny": ["shell(rm:*)", "mcp__git__*"],
     "read_outside_workspace": "allow" | "ask",
     "trusted_servers": ["git"],
     "sandbox": {"mode": "off" | "workspace-write" | "read-only", "network": false}}

Rules come from three files: the user's ``approval.json``; the project's ``.i/approval.json``,
which may only add ``deny`` and ``ask`` (a cloned repository never brings its own allows); and the
allows the user saved from the prompt, ``data_dir/workspaces/<id>/approval.json`` (never in the
project). Order: ``deny_tools`` and deny rules > ask rules > allow rules > ``read_outside_workspace``
> the mode (``auto`` allows what the core would otherwise ask about) > the core's proposal.

In plan mode (the core sends ``plan: true``) an MCP tool (``mcp__SERVER__TOOL``) asks unless
``SERVER`` is in ``trusted_servers``: allow rules and ``auto`` do not run it unseen. The answer of a
``shell`` call carries ``sandbox`` when one is configured; the core applies it (``i_core.sandbox``).
The core still applies its own gate: an invalid answer or a failure never allows.
"""

from __future__ import annotations

import os
import re
from typing import Any

from i_protocol import Request, Worker, WorkerError
from i_protocol.config import ConfigCache
from i_protocol.errors import ConfigError, ProtocolError, SettingsError
from i_protocol.handshake import EXTENSIONS
from i_protocol.settings import optional_bool, optional_choice, optional_object, optional_str_list, reject_unknown

from ..__about__ import __version__
from ..rules import SAVED_RULES_FILE, RuleError, Rules, outside_workspace, parse_rules

# Declared where this i-protocol knows them (an older one has no such names).
worker = Worker(
    "approval",
    __version__,
    dist_name="i-core approval",
    extensions=tuple(name for name in ("plan_mode", "sandbox") if name in EXTENSIONS),
)

_DECISIONS = ("allow", "ask", "deny")
_FIELDS = ("mode", "deny_tools", "allow", "ask", "deny", "read_outside_workspace", "trusted_servers", "sandbox")
PROJECT_FILE = os.path.join(".i", "approval.json")
"""The project's own rules, relative to the workspace: ``deny`` and ``ask`` only."""
SANDBOX_MODES = ("off", "workspace-write", "read-only")
_MCP = re.compile(r"mcp__(?P<server>.+?)__.+")
_files = ConfigCache()
_parsed: dict[tuple[Any, ...], Rules] = {}


class _Policy:
    def __init__(self, request: Request) -> None:
        config = request.config()
        where = config.path or "approval.json"
        data = config.data
        try:
            reject_unknown(data, _FIELDS, file=where)
            self.mode = optional_choice(data, "mode", ("ask", "auto"), "ask", file=where)
            self.deny_tools = frozenset(optional_str_list(data, "deny_tools", [], file=where))
            lists = {key: optional_str_list(data, key, [], file=where) for key in ("allow", "ask", "deny")}
            self.outside = optional_choice(data, "read_outside_workspace", ("allow", "ask"), "allow", file=where)
            self.trusted = frozenset(optional_str_list(data, "trusted_servers", [], file=where))
            self.sandbox = _sandbox(optional_object(data, "sandbox", {}, file=where), where)
        except SettingsError as exc:
            raise WorkerError(str(exc)) from exc
        self.workspace = request.workspace or os.getcwd()
        project = _project_rules(self.workspace)
        saved = _saved_rules(request)
        key = (self.workspace, *(tuple(lists[k]) for k in lists), tuple(project[0]), tuple(project[1]), tuple(saved))
        rules = _parsed.get(key)
        if rules is None:
            try:
                rules = Rules(
                    allow=parse_rules([*lists["allow"], *saved], self.workspace),
                    ask=parse_rules([*lists["ask"], *project[1]], self.workspace),
                    deny=parse_rules([*lists["deny"], *project[0]], self.workspace),
                )
            except RuleError as exc:
                raise WorkerError(f"approval rules: {exc}") from exc
            _parsed.clear()
            _parsed[key] = rules
        self.rules = rules


def _sandbox(data: dict[str, Any], where: str) -> dict[str, Any] | None:
    at = "sandbox"
    reject_unknown(data, ("mode", "network"), file=where, at=at)
    mode = optional_choice(data, "mode", SANDBOX_MODES, "off", file=where, at=at)
    network = optional_bool(data, "network", False, file=where, at=at)
    return None if mode == "off" else {"mode": mode, "network": network}


def _project_rules(workspace: str) -> tuple[list[str], list[str]]:
    """(deny, ask) of the project's ``.i/approval.json``; any other field is an error."""
    path = os.path.join(workspace, PROJECT_FILE)
    try:
        data = _files.load(path, required=False).data
    except ConfigError as exc:
        raise WorkerError(str(exc)) from exc
    try:
        extra = sorted(set(data) - {"deny", "ask"})
        if extra:
            raise WorkerError(
                f"{path}: a project file may only add deny and ask rules, not {', '.join(extra)} "
                "(allows belong in config_dir/approval.json or are saved from the prompt)"
            )
        return (
            optional_str_list(data, "deny", [], file=path),
            optional_str_list(data, "ask", [], file=path),
        )
    except SettingsError as exc:
        raise WorkerError(str(exc)) from exc


def _saved_rules(request: Request) -> list[str]:
    """The allow rules the user saved from the prompt for this workspace (none without an identity)."""
    try:
        path = os.path.join(request.state_dir(), SAVED_RULES_FILE)
    except ProtocolError:
        return []
    try:
        data = _files.load(path, required=False).data
    except ConfigError as exc:
        raise WorkerError(str(exc)) from exc
    try:
        reject_unknown(data, ("allow",), file=path)
        return optional_str_list(data, "allow", [], file=path)
    except SettingsError as exc:
        raise WorkerError(str(exc)) from exc


@worker.hook("tool_approval")
def tool_approval(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Apply deny_tools and the rules, then the mode, to the decision the core proposes."""
    policy = _Policy(request)
    decision = data.get("decision", "ask")
    if decision not in _DECISIONS:
        raise WorkerError(f"tool_approval: decision must be one of {', '.join(_DECISIONS)}, got {decision!r}")
    name = data.get("name")
    arguments = data.get("arguments")
    if not isinstance(name, str) or not isinstance(arguments, dict):
        raise WorkerError("tool_approval: name must be a string and arguments an object")
    data["decision"] = _decide(policy, name, arguments, decision, data.get("plan") is True)
    if name == "shell" and policy.sandbox is not None:
        data["sandbox"] = policy.sandbox
    return data


def _decide(policy: _Policy, name: str, arguments: dict[str, Any], proposed: str, plan: bool) -> str:
    if name in policy.deny_tools:
        return "deny"
    verdict = policy.rules.decide(name, arguments, policy.workspace)
    if verdict in ("deny", "ask"):
        return verdict
    server = _MCP.fullmatch(name)
    if plan and server is not None and server["server"] not in policy.trusted:
        return "ask"  # plan mode: an untrusted server's tool is shown to the user, whatever else allows it
    if verdict == "allow":
        return verdict
    if policy.outside == "ask" and outside_workspace(name, arguments, policy.workspace) is not None:
        return "ask"
    if policy.mode == "auto" and proposed == "ask":
        return "allow"
    return proposed
