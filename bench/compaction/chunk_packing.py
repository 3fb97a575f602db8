"""Chunked model summaries: how many requests, and how full each is (issue 30, item 6).

The installed ``i-compact`` plans and prepares a long English prefix for a small window whose
density is unknown (the budget's rate is provisional, 1 token per byte); the summary requests are
built as the core builds them and sent to the scripted server, which counts tokens by content.
Prints the request count beside the lower bound ceil(prefix tokens / room) and each request's fill
(transcript tokens / (capacity - prompt - summary so far), by the server's count).

    python bench/compaction/chunk_packing.py [--turns 30] [--window 8192] [--note-bytes 5000]

Needs ``i_core``, ``i_scripted`` and ``i-worker-compact`` installed (the e2e tox env has them).
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "e2e"))

from long_task import LongTask  # noqa: E402

from i_protocol.host import WorkerProcess  # noqa: E402
from i_protocol.summary import summary_request  # noqa: E402
from i_scripted import ScriptedModel, prompt_tokens  # noqa: E402

MAX_TOKENS = 512


def history_of(task: LongTask, turns: int) -> list[dict[str, Any]]:
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for turn in range(turns + 2):  # two more turns: the kept suffix
        history += [{"role": "user", "content": task.note(turn)}, {"role": "assistant", "content": "noted"}]
    return history


def budget_result(history: list[dict[str, Any]], capacity: int) -> dict[str, Any]:
    size = sum(len(str(m["content"]).encode()) for m in history)
    return {
        "fits": False,
        "estimate": size,
        "comparable_estimate": size,
        "trigger": capacity * 3 // 4,
        "capacity": capacity,
        "output_reserve": MAX_TOKENS,
        "recommend_compact": True,
        "provisional": True,
    }


def fill(body: dict[str, Any], capacity: int) -> tuple[int, int]:
    """(transcript tokens, room) of one summary request, by the scripted server's count."""
    head, sep, _ = body["messages"][1]["content"].partition("<untrusted_transcript>")
    overhead = prompt_tokens(
        "openai", {**body, "messages": [body["messages"][0], {"role": "user", "content": head + sep}]}
    )
    return prompt_tokens("openai", body) - overhead, capacity - overhead


def run(turns: int, window: int, note_bytes: int) -> None:
    capacity = window - MAX_TOKENS - math.ceil(window * 0.02)
    task = LongTask("english", note_bytes=note_bytes)
    history = history_of(task, turns)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"PATH": "/usr/bin:/bin", "PYTHONUTF8": "1", "HOME": tmp}
        for name in ("config", "data", "runtime", "cache"):
            Path(tmp, name).mkdir()
            env[f"I_{name.upper()}_DIR"] = str(Path(tmp, name))
        Path(tmp, "config", "compact.json").write_text('{"mode": "model", "keep_recent": 2}')
        worker = WorkerProcess.spawn([str(Path(sys.executable).parent / "i-compact")], env=env, cwd=tmp)
        try:
            context = {"workspace": tmp}
            plan = {"model": "small-1", "budget": {}, "history": history, "tools": [], "cut": None}
            planned = worker.call(
                "compact_plan", {**plan, "budget_result": budget_result(history, capacity)}, context=context
            )
            cut = planned["cut"]
            before = {
                "messages": history[1:cut],
                "cut": cut,
                "state": planned["state"],
                "model": "small-1",
                "budget": {},
            }
            prepared = worker.call("before_compact", before, context=context)
        finally:
            worker.close()
    parts = prepared.get("chunks") or [{"prompt": prepared["prompt"], "messages": prepared["messages"]}]
    figures = []
    summary: str | None = None
    with ScriptedModel([task.respond] * (len(parts) + 1), context_window=window, model_name="small-1") as model:
        for part in parts:
            body = {
                "model": "small-1",
                "messages": summary_request(part["prompt"], part["messages"], summary),
                "max_tokens": prepared.get("max_tokens") or MAX_TOKENS,
            }
            figures.append(fill(body, capacity))
            reply = httpx.post(model.base_url + "/chat/completions", json=body, timeout=30).json()
            summary = reply["choices"][0]["message"]["content"]
        refused = model.rejections
    prefix = sum(used for used, _ in figures)
    room = statistics.mean(r for _, r in figures)
    fills = [used / r for used, r in figures]
    chunking = prepared["state"].get("chunking") or {}
    print(f"{turns} turns of {note_bytes} B notes, window {window}, capacity {capacity}, provisional rate")
    print(f"  prefix {prefix} tokens (server count), mean room {room:.0f} tokens")
    print(f"  summary requests {len(figures)}  lower bound ceil(prefix / room) {math.ceil(prefix / room)}")
    if len(fills) > 1:
        print(f"  fill except the last: min {min(fills[:-1]):.2f} median {statistics.median(fills[:-1]):.2f}")
    print(f"  divided messages {chunking.get('dividedMessages')}, shortened {chunking.get('shortenedMessages')}")
    print(f"  refused by the server: {refused}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--window", type=int, default=8192)
    parser.add_argument("--note-bytes", type=int, default=5000)
    args = parser.parse_args()
    run(args.turns, args.window, args.note_bytes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
