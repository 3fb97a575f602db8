"""Message builders shared by the tests (imported via the tests folder on sys.path)."""

from __future__ import annotations

from typing import Any

from i_protocol.history import summary_marker


def system() -> dict[str, Any]:
    return {"role": "system", "content": "You are i."}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str = "", calls: list[tuple[str, str, str]] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": cid, "type": "function", "function": {"name": name, "arguments": args}} for cid, name, args in calls
        ]
    return message


def tool(call_id: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


def summary(text: str) -> dict[str, Any]:
    """A compaction summary as the core writes it: a user message with the summary marker."""
    return {"role": "user", "content": text, "_compaction": summary_marker()}
