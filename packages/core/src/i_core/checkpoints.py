"""A session's history on disk, through its hooks: start, load (``session_load``), save.

A checkpoint is saved only at a complete state (a finished tool batch or a final answer), so a
failed turn leaves the last complete checkpoint on disk. Every history a hook returns is
validated; an invalid one names the hook (exit 6) and nothing is loaded or saved.
"""

from __future__ import annotations

from typing import Any

from i_protocol.history import HistoryError, validate_history

from .errors import SessionError, WorkerFailure
from .hooks import HookRunner
from .session import Session


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
            raise SessionError(f"{self.session.path}: the saved history is invalid: {exc}") from None
        loaded = self.hooks.run("session_load", {"messages": messages, "path": str(self.session.path)})
        messages = loaded.get("messages", messages)
        self._check("session_load", messages, "the session was not loaded")
        return list(messages)

    def system_prompt(self) -> str:
        """The bundled system prompt for this workspace, as the ``system_prompt`` hooks leave it."""
        from .bundled.prompts import DEFAULT_SYSTEM_PROMPT

        prompt = DEFAULT_SYSTEM_PROMPT.replace("{{workspace}}", self.workspace)
        result = self.hooks.run("system_prompt", {"prompt": prompt, "workspace": self.workspace})
        prompt = result.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise WorkerFailure("system_prompt returned no non-empty prompt")
        return prompt

    def save(self, messages: list[dict[str, Any]]) -> None:
        """Save a complete state through ``before_save`` / ``after_save`` (atomically)."""
        path = str(self.session.path)
        messages = self.hooks.run("before_save", {"messages": messages, "path": path}).get("messages", messages)
        self._check("before_save", messages, "nothing was saved, the last checkpoint is unchanged")
        self.session.write(list(messages))
        self.hooks.run("after_save", {"messages": messages, "path": path})

    def _check(self, event: str, messages: object, consequence: str) -> None:
        """The history after ``event`` must be valid; when a hook changed it, the hook is named."""
        try:
            validate_history(messages)
        except HistoryError as exc:
            hooks = self.hooks.subscribers(event)
            if not hooks:
                raise  # the core's own history: a bug, reported as such
            labels = ", ".join(hook.module or hook.exec.argv[0] for hook in hooks)
            raise WorkerFailure(f"{event} hook(s) {labels} returned an invalid history: {exc}; {consequence}") from None
