"""Scripts: the steps the server answers with, one per request, checked before they are served.

A step is an object (or a callable ``step(request_json) -> object``, checked when it answers);
its fields are ``STEP_KEYS``, and an unknown field is refused so that a typo fails loudly.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

Step = dict[str, Any] | Callable[[Any], dict[str, Any]]

STEP_KEYS = frozenset(
    {
        "text",
        "reasoning",
        "tool_calls",
        "finish_reason",
        "usage",
        "status",
        "error_message",
        "error_type",
        "headers",
        "delay",
        "raw_body",
        "chunk_bytes",
        "redirect",
        "body_bytes",
        "stream",
        "phase",
    }
)


class ScriptError(ValueError):
    """A script (or a step a callable returned) is invalid."""


def check_step(step: Any, where: str = "step") -> None:
    """Raise ScriptError when ``step`` is not a valid step (a callable is checked when it answers)."""
    if callable(step):
        return
    if not isinstance(step, dict):
        raise ScriptError(f"{where}: a step must be an object or a callable, not {type(step).__name__}")
    unknown = sorted(set(step) - STEP_KEYS)
    if unknown:
        raise ScriptError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(STEP_KEYS))}")
    for index, call in enumerate(step.get("tool_calls") or []):
        if not isinstance(call, dict) or not isinstance(call.get("name"), str):
            raise ScriptError(f"{where}: tool_calls[{index}] needs a name")
    chunk = step.get("chunk_bytes")
    if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1):
        raise ScriptError(f"{where}: chunk_bytes must be a positive number of bytes")
    usage = step.get("usage")
    if usage is not None and usage != "omit" and not isinstance(usage, dict):
        raise ScriptError(f'{where}: usage must be an object or "omit"')


def load_script(path: str | Path) -> list[dict[str, Any]]:
    """The steps of a JSON script file: a list of steps, or ``{"steps": [...]}``."""
    data = orjson.loads(Path(path).read_bytes())
    steps = data.get("steps") if isinstance(data, dict) else data
    if not isinstance(steps, list):
        raise ScriptError(f"{path}: a script is a JSON list of steps (or an object with a steps list)")
    for index, step in enumerate(steps):
        check_step(step, f"{path}: step {index}")
    return steps
