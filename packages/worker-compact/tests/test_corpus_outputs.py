"""The worker's answers on real coding runs are pinned, byte for byte (work on its speed must not
change what it writes).

Each run of ``../shared/corpora/coding-runs/dev`` is cut at 40, 60 and 80% of its messages, as
``bench/compaction/coding_runs.py`` cuts it, and goes through the worker in process: in local mode
``compact_plan`` + ``before_compact`` + ``after_compact``, in model mode ``compact_plan`` +
``before_compact`` (the prepared transcript or its chunks), and in local mode once more
successively (40 -> 60 -> 80%, each generation on the previous summary). What the model would see
(the cut, summaries, prompts, prepared messages; not the state's timestamps) is hashed per run and
compared with ``fixtures/corpus_outputs.json``, computed from the corpus by this test.

Skipped when the corpus is not beside the repository (``I_TEST_CODING_RUNS`` names another folder).
After a deliberate change of what the worker writes, check the summaries (``coding_runs.py
--summaries``) and then rewrite the digests: ``I_UPDATE_CORPUS_OUTPUTS=1 pytest -k corpus_outputs``.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from builders import summary

from i_compact.worker import worker

FIXTURE = Path(__file__).parent / "fixtures" / "corpus_outputs.json"
LEVELS = (40, 60, 80)
WINDOW = 200_000


def _corpus() -> Path | None:
    configured = os.environ.get("I_TEST_CODING_RUNS")
    root = Path(__file__).resolve().parents[3]
    folder = Path(configured) if configured else root.parent / "shared" / "corpora" / "coding-runs" / "dev"
    return folder if any(folder.glob("*/messages.json")) else None


CORPUS = _corpus()
pytestmark = pytest.mark.skipif(CORPUS is None, reason="the coding-runs corpus is not beside the repository")


def _end(history: list[dict[str, Any]], level: int) -> int:
    """``coding_runs.end_of``: the cut at ``level`` percent, moved past tool results."""
    end = round(len(history) * level / 100)
    while end < len(history) and history[end].get("role") == "tool":
        end += 1
    return end


def _call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    response = worker.handle({"id": 1, "event": event, "data": data, "paths": dirs, "workspace": "/project"})
    assert "error" not in response, response.get("error")
    answer: dict[str, Any] = response["data"]
    return answer


def _plan(history: list[dict[str, Any]], dirs: dict[str, str]) -> dict[str, Any]:
    tokens = len(orjson.dumps(history)) // 4
    budget = {
        "fits": False,
        "estimate": tokens,
        "comparable_estimate": tokens,
        "trigger": int(WINDOW * 0.8),
        "capacity": WINDOW,
        "output_reserve": 8192,
        "recommend_compact": True,
    }
    return _call("compact_plan", {"history": history, "cut": None, "budget_result": budget, "forced": True}, dirs)


def _compact(history: list[dict[str, Any]], dirs: dict[str, str], seen: list[Any]) -> tuple[int, str | None]:
    """One compaction of ``history``; what the model would see goes to ``seen``."""
    planned = _plan(history, dirs)
    cut = planned["cut"]
    data = {"messages": history[1:cut], "cut": cut, "state": planned["state"], "model": "bench", "budget": {}}
    prepared = _call("before_compact", data, dirs)
    seen.append(cut)
    if "summary" not in prepared:  # model mode: the transcript (or its chunks) a model would read
        seen.append({key: prepared.get(key) for key in ("prompt", "messages", "chunks")})
        return cut, None
    final = _call("after_compact", {"summary": prepared["summary"], "state": prepared["state"], "round": 1}, dirs)
    seen += [prepared["summary"], final["summary"]]
    return cut, str(final["summary"])


def _outputs(history: list[dict[str, Any]], dirs: dict[str, str]) -> str:
    seen: list[Any] = []
    for mode in ("local", "model"):
        Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
        for level in LEVELS:
            _compact(history[: _end(history, level)], dirs, seen)
    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": "local", "cache": False}))
    working = history[: _end(history, LEVELS[0])]
    for position, level in enumerate(LEVELS):
        if position:
            working = [*working, *history[_end(history, LEVELS[position - 1]) : _end(history, level)]]
        cut, text = _compact(working, dirs, seen)
        assert text is not None
        working = [working[0], summary(text), *working[cut:]]
    return hashlib.sha256(orjson.dumps(seen)).hexdigest()


def _runs() -> list[str]:
    return sorted(d.name for d in CORPUS.iterdir() if (d / "messages.json").is_file()) if CORPUS else []


@pytest.mark.parametrize("run", _runs())
def test_outputs_on_a_real_coding_run_are_pinned(run: str, dirs: dict[str, str]) -> None:
    assert CORPUS is not None
    history = json.loads((CORPUS / run / "messages.json").read_text())
    digest = _outputs(history, dirs)
    pinned: dict[str, str] = json.loads(FIXTURE.read_text()) if FIXTURE.exists() else {}
    if os.environ.get("I_UPDATE_CORPUS_OUTPUTS") == "1":
        pinned[run] = digest
        FIXTURE.parent.mkdir(exist_ok=True)
        FIXTURE.write_text(json.dumps(dict(sorted(pinned.items())), indent=1) + "\n")
        return
    assert run in pinned, f"no digest for {run}: run with I_UPDATE_CORPUS_OUTPUTS=1 once"
    assert digest == pinned[run], f"{run}: the worker's outputs changed"
