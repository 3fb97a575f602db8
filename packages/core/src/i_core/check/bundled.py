"""Invariants of the modules bundled in the core (approval, prompts, skills, steering), which a
binding may replace like any other: each event's answer as the core checks it, unrelated fields kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

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
    "approval": (("tool_approval: decision allow/ask/deny", approval_decisions),),
    "prompts": (("system_prompt: non-empty prompt", system_prompt),),
    "skills": (("skills: before_turn and tools", skills),),
    "steering": (("steering: queued input appended", steering),),
}
