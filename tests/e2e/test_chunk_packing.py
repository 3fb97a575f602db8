"""Model-mode chunks are packed: each summary request fills its transcript room (issue 30, item 6).

The real ``i-compact`` process plans and prepares a 30-turn, ~45k-token prefix for an 8k window
whose density nothing has measured yet (the budget's rate is provisional: 1 token per byte). The
summary requests are built as the core builds them and sent to the scripted server, which counts
tokens by content. Each request but the last must fill at least 60% of its transcript room
(capacity - prompt - summary so far, by the server's count), and the number of requests must be
close to the lower bound ceil(prefix tokens / room).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from long_task import LongTask

from i_protocol.host import WorkerProcess
from i_protocol.summary import summary_request
from i_scripted import ScriptedModel, prompt_tokens

EXE = Path(sys.executable).parent / "i-compact"
WINDOW = 8_192
MAX_TOKENS = 512
CAPACITY = WINDOW - MAX_TOKENS - math.ceil(WINDOW * 0.02)  # the budget's capacity (2% safety margin)


def session(turns: int = 30, note_bytes: int = 5_000) -> tuple[LongTask, list[dict[str, Any]]]:
    task = LongTask("english", note_bytes=note_bytes)
    history: list[dict[str, Any]] = [{"role": "system", "content": "You are a coding agent."}]
    for turn in range(turns + 2):
        history += [{"role": "user", "content": task.note(turn)}, {"role": "assistant", "content": "noted"}]
    return task, history


def budget_result(history: list[dict[str, Any]]) -> dict[str, Any]:
    size = sum(len(str(m["content"]).encode()) for m in history)
    return {
        "fits": False,
        "estimate": size,
        "comparable_estimate": size,
        "trigger": CAPACITY * 3 // 4,
        "capacity": CAPACITY,
        "output_reserve": MAX_TOKENS,
        "recommend_compact": True,
        "provisional": True,
    }


def transcript_room(body: dict[str, Any]) -> tuple[int, int]:
    """(transcript tokens, transcript room) of one summary request, by the server's count."""
    total = prompt_tokens("openai", body)
    user = body["messages"][1]["content"]
    head, sep, _ = user.partition("<untrusted_transcript>")
    without = {**body, "messages": [body["messages"][0], {"role": "user", "content": head + sep}]}
    overhead = prompt_tokens("openai", without)
    return total - overhead, CAPACITY - overhead


def summarise(model: ScriptedModel, prepared: dict[str, Any]) -> tuple[str, list[tuple[int, int]]]:
    """Send the prepared requests in order, as the core does; the summary and each request's fill."""
    parts = prepared.get("chunks") or [{"prompt": prepared["prompt"], "messages": prepared["messages"]}]
    summary: str | None = None
    figures = []
    for part in parts:
        body = {
            "model": "small-1",
            "messages": summary_request(part["prompt"], part["messages"], summary),
            "max_tokens": prepared.get("max_tokens") or MAX_TOKENS,
        }
        figures.append(transcript_room(body))
        reply = httpx.post(model.base_url + "/chat/completions", json=body, timeout=30).json()
        summary = reply["choices"][0]["message"]["content"]
    assert summary is not None
    return summary, figures


@pytest.fixture
def worker(tmp_path: Path) -> Any:
    env = {"PATH": "/usr/bin:/bin", "PYTHONUTF8": "1", "HOME": str(tmp_path)}
    for name in ("config", "data", "runtime", "cache"):
        (tmp_path / name).mkdir()
        env[f"I_{name.upper()}_DIR"] = str(tmp_path / name)
    (tmp_path / "config" / "compact.json").write_text('{"mode": "model", "keep_recent": 2}')
    process = WorkerProcess.spawn([str(EXE)], env=env, cwd=str(tmp_path))
    yield process
    process.close()


def test_a_long_prefix_is_summarised_in_packed_chunks(worker: Any, tmp_path: Path) -> None:
    task, history = session()
    context = {"workspace": str(tmp_path)}
    plan = {"model": "small-1", "budget": {}, "history": history, "tools": [], "cut": None}
    planned = worker.call("compact_plan", {**plan, "budget_result": budget_result(history)}, context=context)
    cut = planned["cut"]
    assert cut is not None, planned.get("reason")
    before = {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "small-1", "budget": {}}
    prepared = worker.call("before_compact", before, context=context)
    with ScriptedModel([task.respond] * 200, context_window=WINDOW, model_name="small-1") as model:
        summary, figures = summarise(model, prepared)
        rejections = model.rejections
    final = worker.call("after_compact", {"summary": summary, "state": prepared["state"]}, context=context)
    assert final["summary"].startswith("<continuation_summary>")
    assert rejections == 0
    prefix = sum(used for used, _ in figures)
    room = sum(r for _, r in figures) / len(figures)
    bound = math.ceil(prefix / room)
    fills = [round(used / r, 2) for used, r in figures]
    print(prepared["state"]["chunking"])
    print(f"summary requests {len(figures)}, lower bound {bound} (prefix {prefix} tokens), fills {fills}")
    assert prefix > 40_000 and len(figures) >= 2
    assert all(used >= 0.6 * r for used, r in figures[:-1]), fills
    assert len(figures) <= bound + 2, (len(figures), bound)
