"""The bundled `prompts` worker: the system prompt from ``prompts.json`` or the core's default
(``i_core.system_prompt``).

``prompts.json``: ``{"system": "prompts/system.txt", "compact": "prompts/compact.txt"}``, each
relative to the config file's folder; any other key is an error naming it. A prompt file must
hold 1-32000 characters; ``{{workspace}}`` is replaced by the workspace path.

``compact`` serves a ``before_compact`` hook registered by hand (a manifest entry with
``"events": ["system_prompt", "before_compact"]``, ahead of the compactor): it sets ``prompt``,
which the compactor uses as an earlier hook's prompt unless its own compact.json names one.
Without ``compact`` the data passes unchanged. The default profiles register ``system_prompt`` only.
"""

from __future__ import annotations

from typing import Any

from i_protocol import Request, Worker, WorkerError
from i_protocol.errors import FileDecodeError, FileTooLarge, SettingsError
from i_protocol.files import read_text
from i_protocol.settings import optional_str, reject_unknown

from ..__about__ import __version__
from ..system_prompt import DEFAULT_SYSTEM_PROMPT

worker = Worker("prompts", __version__, dist_name="i-core prompts")

MAX_PROMPT_CHARS = 32_000
FIELDS = ("system", "compact")


def load_prompt(request: Request, key: str) -> str | None:
    """The prompt file named by ``key`` in prompts.json, validated; None when not configured."""
    config = request.config()
    where = config.path or "prompts.json"
    try:
        reject_unknown(config.data, FIELDS, file=where)
        value = optional_str(config.data, key, None, file=where)
    except SettingsError as exc:
        raise WorkerError(str(exc)) from exc
    if value is None:
        return None
    path = config.resolve(value)
    try:
        text = read_text(path, MAX_PROMPT_CHARS)
    except OSError as exc:
        raise WorkerError(f"{where}: {key} prompt {path}: {exc.strerror or exc}") from None
    except FileDecodeError:
        raise WorkerError(f"{where}: {key} prompt {path} is not valid UTF-8") from None
    except FileTooLarge:
        raise WorkerError(f"{where}: {key} prompt {path} is longer than {MAX_PROMPT_CHARS} characters") from None
    if not text.strip():
        raise WorkerError(f"{where}: {key} prompt {path} is empty")
    return text


@worker.hook("system_prompt")
def system_prompt(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Set ``prompt`` to the configured system prompt (or the default), workspace substituted, then
    the project's instructions the core read (``instructions``: AGENTS.md / CLAUDE.md)."""
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    text = load_prompt(request, "system") or DEFAULT_SYSTEM_PROMPT
    workspace = request.workspace or data.get("workspace") or ""
    instructions = data.get("instructions")
    data["prompt"] = text.replace("{{workspace}}", str(workspace)) + (
        instructions if isinstance(instructions, str) else ""
    )
    return to_json("system_prompt", data)


@worker.hook("before_compact")
def before_compact(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Set ``prompt`` to prompts.json's ``compact`` prompt, workspace substituted; unchanged without one."""
    text = load_prompt(request, "compact")
    if text is None:
        return data
    workspace = request.workspace or data.get("workspace") or ""
    data["prompt"] = text.replace("{{workspace}}", str(workspace))
    return data
