"""A model that cannot finish a summary does not strand model mode (issue 30, item 9).

Every summary reply of the scripted model ends with ``finish_reason: "length"`` (as SmolLM2-135M's
do on llama.cpp in an 8k window). The core asks ``compact_plan`` once more with
``previous_attempt {cut, reason: "summary_not_finished"}``; with compact.json's default
``on_unfinished_summary: "local"`` the compactor answers with its local summary and every turn
goes on; with ``"fail"`` the compactions fail as before.
"""

from __future__ import annotations

from typing import Any

import orjson
from long_task import LongTask

from i_scripted import ScriptedModel

WINDOW = 8_192


def attempts(dirs) -> list[dict]:
    (found,) = (dirs["data"] / "workspaces").glob("*/compact/attempts.json")
    return orjson.loads(found.read_bytes())["records"]


def cut_off(task: LongTask):
    def respond(request: dict[str, Any]) -> dict[str, Any]:
        if not request.get("tools"):  # a summary request: the reply runs out of tokens
            return {
                "text": "<continuation_summary>\n## Latest user request\ncontinue record",
                "finish_reason": "length",
            }
        return task.respond(request)

    return respond


def run(i, write_config, plugins, project, dirs, setting: str | None, turns: int = 14):
    plugins("compact")
    config = {"keep_recent": 4, "mode": "model", **({"on_unfinished_summary": setting} if setting else {})}
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps(config))
    task = LongTask("english", note_bytes=1_500)
    results = []
    with ScriptedModel([cut_off(task)] * 200, context_window=WINDOW) as model:
        write_config(model.base_url, max_tokens=512, budget={"context_window": WINDOW})
        for turn in range(turns):
            results.append(i("-C", str(project), "--session-name", "s", task.note(turn)))
        summaries = [r for r in model.requests if not r.body.get("tools")]
    return results, summaries


def test_an_unfinished_summary_is_answered_with_the_local_summary(i, write_config, plugins, project, dirs):
    results, summaries = run(i, write_config, plugins, project, dirs, None)
    assert all(r.returncode == 0 for r in results), results[-1].stderr
    assert summaries, "no summary request was sent"
    said = [r.stderr for r in results if "summary_not_finished" in r.stderr]
    assert said and all(
        "the summary reply did not finish normally (finish reason 'length'); the compactor plans again "
        "(summary_not_finished)" in s
        for s in said
    )
    saved = orjson.loads((project / ".i" / "sessions" / "s.json").read_bytes())["messages"]
    summary = next(m for m in saved if isinstance(m.get("_compaction"), dict))
    assert "<state_record" in summary["content"] and "continue record" not in summary["content"]
    records = [r for r in attempts(dirs) if r.get("status") == "compacted"]
    assert records and all(r["previousAttempt"]["reason"] == "summary_not_finished" for r in records)


def test_fail_keeps_the_old_behaviour(i, write_config, plugins, project, dirs):
    results, _ = run(i, write_config, plugins, project, dirs, "fail")
    failed = [r for r in results if "did not finish normally" in r.stderr]
    assert failed, [r.stderr for r in results]
    assert any("compact_plan, asked again, declined: summary_not_finished" in r.stderr for r in failed)
    assert results[-1].returncode != 0  # once the window is full, every turn fails, as before
    records = attempts(dirs)
    assert not any(r.get("status") == "compacted" for r in records)
    assert any(r.get("reason") == "summary_not_finished" or r.get("check") == "summary_reply_invalid" for r in records)
