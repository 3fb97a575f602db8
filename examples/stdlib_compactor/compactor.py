#!/usr/bin/env python3
"""A third-party compactor written with the Python standard library only (no i_protocol).

It proves the worker contract is language-neutral: NDJSON on stdin/stdout, one frame per line,
at most 48 MiB, flushed per frame, nothing else on stdout. The policy is simple and local (no
summary model): cut at the newest user message that leaves at least ``KEEP`` messages after it,
never inside a tool batch, and summarise the prefix by quoting the user's requests and the last
assistant answer.
"""

import json
import re
import sys

MAX_FRAME_BYTES = 48 * 1024 * 1024
KEEP = 2
QUOTE_CHARS = 400
_ID = re.compile(rb'^\s*\{\s*"id"\s*:\s*(\d{1,20})\s*[,}]')


def answer(frame):
    """Write one frame as one line and flush it at once: the core waits for it."""
    sys.stdout.buffer.write(json.dumps(frame, separators=(",", ":")).encode("utf-8") + b"\n")
    sys.stdout.buffer.flush()


def in_batch(history, index):
    """A tool result, or the image attachment the core adds right after tool results."""
    role = history[index].get("role")
    attachment = role == "user" and index > 0 and history[index - 1].get("role") == "tool"
    return role == "tool" or attachment


def compact_plan(data):
    history = data.get("history")
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        raise ValueError("compact_plan: history must be a list of messages")
    cut = None
    for index in range(len(history) - KEEP, 1, -1):
        if history[index].get("role") == "user" and not in_batch(history, index):
            cut = index
            break
    data["cut"] = cut
    data["state"] = {"planned_by": "stdlib-compactor", "cut": cut}
    if cut is None:
        data["reason"] = "no_user_boundary"
    return data


def text(message):
    content = message.get("content")
    if isinstance(content, list):
        content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
    return " ".join(str(content or "").split())[:QUOTE_CHARS]


def before_compact(data):
    messages = data.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError("before_compact: messages must be a non-empty list")
    requests = [text(m) for m in messages if m.get("role") == "user"]
    answers = [text(m) for m in messages if m.get("role") == "assistant" and m.get("content")]
    lines = ["Earlier requests:"] + [f"- {r}" for r in requests if r]
    if answers:
        lines += ["Last answer before this point:", answers[-1]]
    data["summary"] = "\n".join(lines)
    return data


def after_compact(data):
    summary = data.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("after_compact: the summary is empty")
    data["summary"] = summary.strip()
    return data


HANDLERS = {"compact_plan": compact_plan, "before_compact": before_compact, "after_compact": after_compact}


def serve():
    while True:
        line = sys.stdin.buffer.readline(MAX_FRAME_BYTES + 1)
        if not line:
            return 0
        if len(line) > MAX_FRAME_BYTES:
            found = _ID.match(line[:128])
            while line and not line.endswith(b"\n"):  # skip the rest of the oversized frame
                line = sys.stdin.buffer.readline(1 << 20)
            if found is None:
                print("stdlib-compactor: oversized request without a readable id", file=sys.stderr)
                return 2
            answer({"id": int(found.group(1)), "error": f"request frame exceeds the {MAX_FRAME_BYTES}-byte limit"})
            continue
        try:
            frame = json.loads(line)
        except ValueError as exc:
            found = _ID.match(line[:128])
            if found is None:
                print(f"stdlib-compactor: unreadable request without an id: {exc}", file=sys.stderr)
                return 2
            answer({"id": int(found.group(1)), "error": f"request is not valid JSON: {exc}"})
            continue
        request_id = frame.get("id") if isinstance(frame, dict) else None
        if not isinstance(request_id, int) or isinstance(request_id, bool) or request_id < 0:
            print("stdlib-compactor: request without a valid id", file=sys.stderr)
            return 2
        data = frame.get("data", {})
        handler = HANDLERS.get(frame.get("event"))
        try:
            if not isinstance(data, dict):
                raise ValueError("request data must be an object")
            answer({"id": request_id, "data": handler(data) if handler else data})
        except ValueError as exc:
            answer({"id": request_id, "error": str(exc)})


if __name__ == "__main__":
    if sys.argv[1:] == ["--version"]:
        print("stdlib-compactor 1.0.0 (i-protocol 1)")
        sys.exit(0)
    sys.exit(serve())
