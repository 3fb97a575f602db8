"""How much of a summary request could a prefix-caching provider serve from its cache? (issue 41, item 5)

Runs the console scenario of ``bench/compaction_stall.py`` (prepare off, no think time) against the
scripted model, records every request, and for each summary request measures, in the scripted
model's reference tokens over the requests rendered as a chat template would (each message's role,
then its text), the longest common prefix with the conversation request sent just before it: the
share a provider that caches by prefix (OpenAI, Anthropic, llama.cpp's slot cache) could serve.

It also measures the share the *other* shape would get: a summary request that repeats the
conversation's own last request (system prompt, tool schemas, the history as sent) and asks for the
summary at its end. That shape shows the summary model the raw history, not what ``before_compact``
prepared (the protocol-aware reduction, declared omissions, masked secrets), which is why it is not
built (the compact README, "A summary request the cache can serve").

    .tox/py311-e2e/bin/python bench/compaction/summary_prefix.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "e2e"))

from stall import FILLER, Console, ModelLog, config, responder

from i_scripted import reference_tokens


def rendered(body: dict[str, Any]) -> str:
    """The request as a chat template would lay it out: tool schemas first, then each message."""
    parts = [orjson.dumps(body.get("tools") or []).decode()]
    for message in body.get("messages", []):
        content = message.get("content")
        text = content if isinstance(content, str) else orjson.dumps(content).decode()
        parts.append(f"<|{message.get('role')}|>\n{text}")
    return "\n".join(parts)


def common_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def main() -> None:
    from i_scripted import ScriptedModel

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = {key: root / key for key in ("config", "data", "cache", "runtime")}
        for folder in dirs.values():
            folder.mkdir()
        project = root / "project"
        project.mkdir()
        env = {**os.environ, **{f"I_{key.upper()}_DIR": str(path) for key, path in dirs.items()}}
        (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": []}))
        (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
        log = ModelLog()
        with ScriptedModel([responder(log, 0.0, 0.0)] * 100, context_window=9000) as model:
            (dirs["config"] / "config.json").write_bytes(orjson.dumps(config(model.base_url, "off")))
            console = Console(project, env)
            try:
                console.prompt()
                for n in range(8):
                    console.turn(f"turn {n}: {FILLER}")
                console.close()
            finally:
                console.kill()
            bodies = [request.body for request in model.requests if isinstance(request.body, dict)]
    previous: dict[str, Any] | None = None
    for body in bodies:
        if body.get("tools"):
            previous = body
            continue
        if previous is None:
            continue
        summary, conversation = rendered(body), rendered(previous)
        shared = common_prefix(summary, conversation)
        total = reference_tokens(summary)
        served = reference_tokens(summary[:shared])
        print(
            f"summary request: {total} tokens; common prefix with the conversation request before it: "
            f"{shared} characters, {served} tokens = {100 * served / total:.1f}%"
        )
        reshaped = reference_tokens(conversation) + 200  # + an instruction at the end
        print(
            f"  a request repeating the conversation's own request + an instruction: {reshaped} tokens, "
            f"{100 * reference_tokens(conversation) / reshaped:.1f}% servable from the prefix cache"
        )


if __name__ == "__main__":
    main()
