"""The model-facing descriptions of the built-in tools (``{name, description, parameters}``)."""

from __future__ import annotations

from typing import Any


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
    }


_PATH = {"type": "string", "description": "File path, relative to the workspace or absolute."}

BUILTIN_SCHEMAS: list[dict[str, Any]] = [
    _schema(
        "read",
        "Read a UTF-8 text file. Lines come numbered ('<number><TAB><text>'); up to 2000 lines per call, "
        "use offset/limit for more. Directories and binary files are refused.",
        {
            "path": _PATH,
            "offset": {"type": "integer", "minimum": 1, "description": "First line to show (1-based). Default 1."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": 100000,
                "description": "Lines to show. Default 2000.",
            },
        },
        ["path"],
    ),
    _schema(
        "write",
        "Create or overwrite a file with the given content (parent folders are created). "
        "Prefer edit for changing part of an existing file.",
        {"path": _PATH, "content": {"type": "string", "description": "The whole new content of the file."}},
        ["path", "content"],
    ),
    _schema(
        "edit",
        "Replace exact text in a file. old_string must appear exactly once unless replace_all is true; "
        "copy it from read output without the line-number prefix, whitespace included.",
        {
            "path": _PATH,
            "old_string": {"type": "string", "description": "The exact text to replace (not empty)."},
            "new_string": {"type": "string", "description": "The replacement text."},
            "replace_all": {"type": "boolean", "description": "Replace every occurrence. Default false."},
        },
        ["path", "old_string", "new_string"],
    ),
    _schema(
        "glob",
        "List files whose path matches a glob pattern relative to the workspace ('*', '?', '[abc]', '**' for any "
        "depth, e.g. 'src/**/*.py'). Sorted. Hidden files, build folders and symlinks are skipped.",
        {
            "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.md'."},
            "path": {"type": "string", "description": "Folder the pattern is relative to. Default: the workspace."},
        },
        ["pattern"],
    ),
    _schema(
        "search",
        "Search file contents; answers 'path:line: text' lines. Skips hidden, build, symlinked, binary and "
        "files over 1 MiB; walks at most 10000 files and returns at most 20000 matches.",
        {
            "pattern": {
                "type": "string",
                "description": "Python regular expression (or literal text with regex: false).",
            },
            "path": {"type": "string", "description": "Folder or file to search. Default: the workspace."},
            "glob": {
                "type": "string",
                "description": "Only files matching this glob, e.g. '*.py' (name) or 'src/**/*.ts'.",
            },
            "regex": {"type": "boolean", "description": "Treat pattern as a regular expression. Default true."},
            "case_sensitive": {"type": "boolean", "description": "Default true."},
        },
        ["pattern"],
    ),
    _schema(
        "shell",
        "Run a command with /bin/sh -c in the workspace. stdin is empty; stdout and stderr are merged and long "
        "output is cut in the middle; the exit code is reported. The command is killed at the timeout.",
        {
            "command": {"type": "string", "description": "The shell command line."},
            "timeout": {
                "type": "number",
                "exclusiveMinimum": 0,
                "maximum": 600,
                "description": "Seconds. Default 120.",
            },
        },
        ["command"],
    ),
    _schema(
        "view_image",
        "Look at an image file (PNG, JPEG, GIF or WebP, at most 8 MiB); it is attached to the conversation.",
        {"path": _PATH},
        ["path"],
    ),
    _schema(
        "recall",
        "Return the exact original messages that a compaction summary replaced. A summary cites them as data "
        "after 'Archived originals': spans of message numbers ([span 12-40]) with the tool call ids in them "
        "(call_{3..5} stands for call_3, call_4, call_5; a quoted id is a JSON string). Pass one span (a number "
        'or range, e.g. "12-40") or one cited tool call id. Text too long for one result comes in parts: each '
        "names its character range and the next offset; call again with that offset for the rest. Read-only; "
        "secrets stay masked.",
        {
            "span": {"type": "string", "description": 'A message number or range from the summary, e.g. "12-40".'},
            "tool_call_id": {"type": "string", "description": "A tool call id the summary cites."},
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "Character to start from: the 'next offset' a part names. Default 0.",
            },
        },
        [],
    ),
]
