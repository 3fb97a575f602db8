"""The model-facing schemas of the memory tools (name, description, parameters).

The core's manifest generator copies these; ``i-memory schemas`` prints them as JSON.
"""

from __future__ import annotations

from typing import Any

_KEY = {
    "type": "string",
    "description": "Entry name, e.g. 'build.command' or 'style.tests'. 1-128 characters, one line.",
}

_APPROVAL = "Each call asks the user for approval."

TOOLS: list[dict[str, Any]] = [
    {
        "name": "memory_get",
        "description": (
            "Read one entry of this workspace's persistent memory (notes kept across sessions). "
            "Returns the stored text exactly. " + _APPROVAL
        ),
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
            "Create or replace one entry of this workspace's persistent memory. Memory is plain text that is "
            "shown to you at later turns and sessions in this workspace: keep entries short, factual and "
            "useful later (build commands, conventions, decisions). Never store secrets (API keys, tokens, "
            "passwords, private keys): such values are refused; store a reference instead, such as the name "
            "of the environment variable or the path of the file that holds the secret. Default limits: values "
            "up to 8000 characters, 256 entries, 64 KiB in total. " + _APPROVAL
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "key": _KEY,
                "value": {"type": "string", "description": "The text to remember (replaces any earlier value)."},
            },
            "required": ["key", "value"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_delete",
        "description": "Delete one entry of this workspace's persistent memory. " + _APPROVAL,
        "parameters": {
            "type": "object",
            "properties": {"key": _KEY},
            "required": ["key"],
            "additionalProperties": False,
        },
    },
    {
        "name": "memory_list",
        "description": (
            "List the entries of this workspace's persistent memory (keys, sizes and short previews), "
            "optionally only keys that start with a prefix. " + _APPROVAL
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "prefix": {"type": "string", "description": "Only keys starting with this text; omit for all."}
            },
            "additionalProperties": False,
        },
    },
]
