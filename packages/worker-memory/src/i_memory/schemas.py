"""The model-facing schemas of the memory tools (name, description, parameters).

The core's manifest generator copies these; ``i-memory schemas`` prints them as JSON.
"""

from __future__ import annotations

from typing import Any

_KEY = {"type": "string", "description": "Entry name, e.g. 'build.command'."}

# Short on purpose: every schema goes with every model request, and on a 4k-8k window each sentence
# costs conversation. The limits are enforced by the worker, which names them in its errors.
_APPROVAL = "Asks the user for approval."

TOOLS: list[dict[str, Any]] = [
    {
        "name": "memory_get",
        "description": "Read one entry of this workspace's memory (notes kept across sessions). " + _APPROVAL,
        "parameters": {
            "type": "object",
            "properties": {"key": _KEY},
            "required": ["key"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_set",
        "description": (
            "Create or replace one memory entry, shown to you in later sessions: short facts such as build "
            "commands and conventions. Never store secrets; name where they are kept instead. " + _APPROVAL
        ),
        "parameters": {
            "type": "object",
            "properties": {"key": _KEY, "value": {"type": "string"}},
            "required": ["key", "value"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_delete",
        "description": "Delete one memory entry. " + _APPROVAL,
        "parameters": {
            "type": "object",
            "properties": {"key": _KEY},
            "required": ["key"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_list",
        "description": "List memory entries (keys and previews), optionally those whose key starts with prefix. "
        + _APPROVAL,
        "parameters": {
            "type": "object",
            "properties": {"prefix": {"type": "string"}},
            "additionalProperties": False,
        },
    },
]
