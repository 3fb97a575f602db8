"""A session's history on disk, through its hooks: start, load (``session_load``), save.

A checkpoint is saved only at a complete state (a finished tool batch or a final answer), so a
failed turn leaves the last complete checkpoint on disk. Every history a hook returns is
validated; an invalid one names the hook (exit 6) and nothing is loaded or saved.
"""

from __future__ import annotations

from typing import Any

from i_protocol.history import HistoryError, validate_history

from .errors import SessionError
from .hooks import HookRunner
from .session import Session
from .system_prompt import default_system_prompt, project_instructions


class Checkpoints:
    """Loads and saves one session's history with the hooks of its runtime."""

    def __init__(self, hooks: HookRunner, session: Session, workspace: str) -> None:
        self.hooks = hooks
        self.session = session
        self.workspace = workspace

    def load(self) -> list[dict[str, Any]]:
        """The saved history after ``session_load``, or ``[system prompt]`` for a new session."""
        if self.session.is_new:
            return [{"role": "system", "content": self.system_prompt()}]
        messages = self.session.messages
        try:
            validate_history(messages)
        except HistoryError as exc:
            raise SessionError(f"{self.session.path}: the saved history is invalid: {exc}") from exc
        data = {"messages": messages, "path": str(self.session.path)}
        return list(self.hooks.checked("session_load", data, consequence="the session was not loaded"))

    def system_prompt(self) -> str:
        """The core's default system prompt for this workspace, as the ``system_prompt`` hooks leave it."""
        instructions = project_instructions(self.workspace)
        default = default_system_prompt(self.workspace) + instructions
        data = {"prompt": default, "workspace": self.workspace, "instructions": instructions}
        prompt: str = self.hooks.checked("system_prompt", data)
        return prompt

    def save(self, messages: list[dict[str, Any]]) -> None:
        """Save a complete state through ``before_save`` / ``after_save`` (atomically)."""
        path = str(self.session.path)
        unchanged = "nothing was saved, the last checkpoint is unchanged"
        saved = self.hooks.checked("before_save", {"messages": messages, "path": path}, consequence=unchanged)
        if saved is messages:  # a history a hook returned was validated by its checker already
            validate_history(saved)  # the file never holds an invalid history, whoever built it
        self.session.write(list(saved))
        self.hooks.run("after_save", {"messages": saved, "path": path})
