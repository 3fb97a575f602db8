"""The model-facing descriptions of the built-in tools (``{name, description, parameters}``)."""

from __future__ import annotations

from typing import Any


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    }


_PATH = {"type": "string", "description": "File path."}

# Descriptions say what a model needs to call the tool well, nothing more: every schema is sent with
# every request, and on a 4k-8k local window each sentence costs room for the conversation
# (bench/tool_schemas.py prints each tool's cost by the server's own count). Limits are enforced
# by the tools themselves, which say so in their errors.
BUILTIN_SCHEMAS: list[dict[str, Any]] = [
    _schema(
        "read",
        "Read a text file; lines come numbered. Use offset/limit for long files.",
        {
            "path": _PATH,
            "offset": {"type": "integer", "description": "First line, from 1."},
            "limit": {"type": "integer", "description": "Number of lines (default 2000)."},
        },
        ["path"],
    ),
    _schema(
        "write",
        "Create or overwrite a file.",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _schema(
        "edit",
        "Replace old_string, which must occur exactly once (unless replace_all), with new_string in a file.",
        {
            "path": _PATH,
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
            "replace_all": {"type": "boolean"},
        },
        ["path", "old_string", "new_string"],
    ),
    _schema(
        "glob",
        "List files matching a glob pattern, e.g. 'src/**/*.py'.",
        {"pattern": {"type": "string"}, "path": {"type": "string", "description": "Folder (default: workspace)."}},
        ["pattern"],
    ),
    _schema(
        "search",
        "Search file contents for a regex; answers 'path:line: text'.",
        {
            "pattern": {"type": "string"},
            "path": {"type": "string", "description": "Folder or file (default: workspace)."},
            "glob": {"type": "string", "description": "Only files matching this glob."},
            "regex": {"type": "boolean", "description": "false: literal text."},
            "case_sensitive": {"type": "boolean"},
        },
        ["pattern"],
    ),
    _schema(
        "shell",
        "Run a shell command in the workspace; answers its output and exit code.",
        {"command": {"type": "string"}, "timeout": {"type": "number", "description": "Seconds (default 120)."}},
        ["command"],
    ),
    _schema(
        "view_image",
        "Attach an image file (PNG, JPEG, GIF, WebP) to the conversation.",
        {"path": _PATH},
        ["path"],
    ),
    _schema(
        "recall",
        'Get the original messages a compaction summary replaced: one span it cites (e.g. "12-40") or one '
        "tool call id. A long answer comes in parts; pass the next offset it names.",
        {
            "span": {"type": "string"},
            "tool_call_id": {"type": "string"},
            "offset": {"type": "integer"},
        },
        [],
    ),
]
