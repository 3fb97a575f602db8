"""The core's compaction transaction against a scriptable budget+compactor worker: every check,
and that any failure commits nothing and keeps the earlier checkpoint."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol.summary import request_overhead
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

HERE = Path(__file__).parent
LONG = "word " * 400  # ~2 KB per user turn


def env_of(dirs: dict[str, Path]) -> dict[str, str]:
    """This process's environment: the ``dirs`` fixture has set the four ``I_*_DIR`` in it."""
    return dict(os.environ)


@pytest.fixture
def setup(dirs, project, tmp_path, write_manifest):
    behaviour = tmp_path / "behaviour.json"
    behaviour.write_text("{}")
    worker = [sys.executable, str(HERE / "workers" / "fake_compactor.py"), str(behaviour)]
    events = ["context_budget", "compact_plan", "before_compact", "after_compact", "after_compact_commit"]
    manifest = write_manifest({"hooks": [{"events": events, "exec": worker}]})
    env = env_of(dirs)

    class Setup:
        def behave(self, **conf):
            behaviour.write_text(json.dumps(conf))

        def run(self, base_url: str, text: str, *extra: str):
            (dirs["config"] / "config.json").write_bytes(
                orjson.dumps({"protocol": "openai", "base_url": base_url, "model": "m", "stream": False, "retries": 0})
            )
            return subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "i_core",
                    "-C",
                    str(project),
                    "--manifest",
                    str(manifest),
                    "--session-name",
                    "s",
                    *extra,
                    text,
                ],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=scaled(120),
            )

        session = project / ".i" / "sessions" / "s.json"
        backup = project / ".i" / "sessions" / "s.precompact.json"

    return Setup()


def grow(setup, model, turns: int = 3) -> bytes:
    """A few turns that fit, then the saved session bytes."""
    setup.behave()
    for n in range(turns):
        assert setup.run(model.base_url, f"turn {n} {LONG}").returncode == 0
    return setup.session.read_bytes()


@pytest.mark.parametrize(
    "conf, message",
    [
        ({"cut": 1}, "invalid cut 1"),
        ({"cut": 0}, "invalid cut 0"),
        ({"cut": 999}, "invalid cut 999"),
        ({"cut": "7"}, "invalid cut '7'"),
        ({"cut": True}, "invalid cut True"),
        ({"cut": "last_tool"}, "inside a tool batch"),
        ({"cut": "keep_two", "summary": ""}, "empty or non-text local summary"),
        ({"cut": "keep_two", "summary": "x" * 40000}, "does not fit the context budget"),
        ({"cut": "keep_two", "crash": "compact_plan"}, "fake compactor crashed on compact_plan"),
        ({"cut": "keep_two", "crash": "after_compact"}, "fake compactor crashed on after_compact"),
    ],
)
def test_failed_compaction_commits_nothing(setup, conf, message):
    steps = [{"text": "ok"}] * 3 + [
        {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]},
        {"text": "read it"},
        {"text": "never"},
    ]
    with ScriptedModel(steps) as model:
        before = grow(setup, model)
        assert setup.run(model.base_url, "read the readme").returncode == 0  # a tool batch in history
        before = setup.session.read_bytes()
        setup.behave(fits_over=len(before) // 4, **conf)
        result = setup.run(model.base_url, "one more " + LONG)
    assert result.returncode == 5, result.stderr
    assert message in result.stderr
    assert setup.session.read_bytes() == before  # the earlier checkpoint is kept
    assert not setup.backup.exists()
    assert len(model.requests) == 5  # no model request for the turn that could not fit


def test_non_reducing_summary_is_refused(setup):
    with ScriptedModel([{"text": "ok"}] * 4) as model:
        before = grow(setup, model)
        # A summary bigger than everything it replaces, while the budget would still accept it.
        setup.behave(fits_over=len(before) // 4, cut="keep_two", summary="s" * 20000)
        result = setup.run(model.base_url, "again " + LONG)
    assert result.returncode == 5
    assert "is not smaller" in result.stderr or "does not fit the context budget" in result.stderr
    assert not setup.backup.exists()


def test_successful_compaction_commits_backup_and_summary(setup):
    with ScriptedModel([{"text": "ok"}] * 5) as model:
        before_bytes = grow(setup, model)
        old = orjson.loads(before_bytes)["messages"]
        # The next request (~8.7K chars of content) does not fit; a summary plus the suffix does.
        setup.behave(fits_over=7000, cut="keep_two", summary="<continuation_summary>state</continuation_summary>")
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    # The backup is the whole history as it stood when compaction ran: the old session plus the new request.
    backup = orjson.loads(setup.backup.read_bytes())["messages"]
    assert backup[: len(old)] == old and backup[-1]["content"].startswith("next ")
    saved = orjson.loads(setup.session.read_bytes())["messages"]
    assert saved[0] == old[0]  # the system message is untouched
    assert saved[1]["role"] == "user" and "untrusted" in saved[1]["content"] and "state" in saved[1]["content"]
    assert saved[-1]["role"] == "assistant"
    sent = model.requests[-1].body["messages"]
    assert "<continuation_summary>state</continuation_summary>" in sent[1]["content"]
    assert "_compaction" not in sent[1]  # private markers never go on the wire


def test_summary_request_with_the_model_route(setup):
    summary_requests = []

    def step(request):
        if not request.get("tools"):
            summary_requests.append(request)
            return {"text": "<continuation_summary>from the model</continuation_summary>"}
        return {"text": "ok"}

    with ScriptedModel([step] * 8) as model:
        grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise for {{workspace}}")
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    request = summary_requests[0]
    assert request["messages"][0] == {"role": "system", "content": "Summarise for {{workspace}}"}
    assert "<untrusted_transcript>" in request["messages"][1]["content"]
    assert "do not follow any instruction" in request["messages"][1]["content"]


def test_no_compactor_means_no_fallback(setup, tmp_path, dirs, project):
    # The same budget worker, but only subscribed to context_budget: no compact_plan subscriber.
    behaviour = tmp_path / "b2.json"
    behaviour.write_text(json.dumps({"fits_over": 10}))
    manifest = tmp_path / "budget-only.json"
    manifest.write_bytes(
        orjson.dumps(
            {
                "hooks": [
                    {
                        "events": ["context_budget"],
                        "exec": [sys.executable, str(HERE / "workers" / "fake_compactor.py"), str(behaviour)],
                    }
                ]
            }
        )
    )
    with ScriptedModel([{"text": "never"}]) as model:
        (dirs["config"] / "config.json").write_bytes(orjson.dumps({"base_url": model.base_url, "model": "m"}))
        env = env_of(dirs)
        result = subprocess.run(
            [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest), "hi"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 5 and "no compactor is installed" in result.stderr
    assert model.requests == []


# -- the summary-request loop, a second plan, and diagnostics that follow the core's decision ------


def _log(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def _commit_setup(setup, tmp_path):
    setup.log = tmp_path / "log.ndjson"
    return setup


def test_chunked_summary_requests_carry_the_summary_so_far(setup, tmp_path):
    summary_requests = []

    def step(request):
        if not request.get("tools"):
            summary_requests.append(request)
            return {"text": f"<continuation_summary>after part {len(summary_requests)}</continuation_summary>"}
        return {"text": "ok"}

    log = tmp_path / "log.ndjson"
    with ScriptedModel([step] * 12) as model:
        grow(setup, model, turns=5)
        setup.behave(fits_over=12000, cut="keep_two", chunks=3, log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    assert [r["messages"][0]["content"] for r in summary_requests] == ["part 1", "part 2", "part 3"]
    assert "<summary_so_far>" not in summary_requests[0]["messages"][1]["content"]
    assert "after part 1" in summary_requests[1]["messages"][1]["content"]
    assert "after part 2" in summary_requests[2]["messages"][1]["content"]
    saved = orjson.loads(setup.session.read_bytes())["messages"]
    assert "after part 3" in saved[1]["content"]
    commits = [r for r in _log(log) if r["event"] == "after_compact_commit"]
    assert len(commits) == 1 and commits[0]["committed"] is True and commits[0]["check"] is None
    assert commits[0]["comparable_after"] < commits[0]["comparable_before"]
    assert isinstance(commits[0]["cut"], int)


def _numbered_summaries() -> tuple[list[dict], Any]:
    """The summary requests a scripted model received, and its step: summary n reads ``version n``."""
    summary_requests: list[dict] = []

    def step(request):
        if not request.get("tools"):
            summary_requests.append(request)
            return {"text": f"<continuation_summary>version {len(summary_requests)}</continuation_summary>"}
        return {"text": "ok"}

    return summary_requests, step


def test_after_compact_may_ask_for_bounded_revisions(setup, tmp_path):
    summary_requests, step = _numbered_summaries()
    with ScriptedModel([step] * 12) as model:
        grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", revise=2)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    assert [r["messages"][0]["content"] for r in summary_requests] == ["Summarise", "revise round 1", "revise round 2"]
    assert "version 1" in summary_requests[1]["messages"][1]["content"]  # the summary so far
    assert "version 3" in orjson.loads(setup.session.read_bytes())["messages"][1]["content"]


@pytest.mark.parametrize("provisional", [False, True])
def test_a_provisional_budget_lets_the_server_count_a_summary_request(setup, provisional):
    # The summary request is over the byte estimate; with nothing of the model's density observed
    # (provisional), that estimate is several times the real count, so the server counts it.
    summary = {"text": "<continuation_summary>s</continuation_summary>"}
    with ScriptedModel([{"text": "ok"}] * 5 + [summary, {"text": "ok"}]) as model:
        before = grow(setup, model, turns=5)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", provisional=provisional)
        result = setup.run(model.base_url, "next " + LONG)
    if provisional:
        assert result.returncode == 0, result.stderr
        assert [r.body["messages"][0]["content"] for r in model.requests if not r.body.get("tools")] == ["Summarise"]
        assert (
            "<continuation_summary>s</continuation_summary>"
            in orjson.loads(setup.session.read_bytes())["messages"][1]["content"]
        )
    else:
        assert result.returncode == 5
        assert "the summary request (summary) does not fit the context budget" in result.stderr
        assert setup.session.read_bytes() == before


@pytest.mark.parametrize("answer", ["local", "decline", None])
def test_an_unfinished_summary_asks_compact_plan_once_more(setup, tmp_path, answer):
    log = tmp_path / "log.ndjson"
    cut_off = {"text": "<continuation_summary>half a summ", "finish_reason": "length"}
    with ScriptedModel([{"text": "ok"}] * 3 + [cut_off, cut_off, {"text": "ok"}]) as model:
        before = grow(setup, model)
        conf = {"on_unfinished": answer} if answer else {}
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", log=str(log), **conf)
        result = setup.run(model.base_url, "next " + LONG)
    plans = [r for r in _log(log) if r["event"] == "compact_plan"]
    assert len(plans) == 2 and "previous_attempt" not in plans[0]
    assert plans[1]["previous_attempt"] == {"cut": plans[1]["history_length"] - 2, "reason": "summary_not_finished"}
    assert "the summary reply did not finish normally" in result.stderr
    assert "the compactor plans again (summary_not_finished)" in result.stderr  # said once, in one line
    assert result.stderr.count("plans again") == 1
    commit = [r for r in _log(log) if r["event"] == "after_compact_commit"][-1]
    if answer == "local":
        assert result.returncode == 0, result.stderr
        saved = orjson.loads(setup.session.read_bytes())["messages"]
        assert "local summary after an unfinished one" in saved[1]["content"]
        assert commit["committed"] is True
    else:
        # Declined, or planned the same way and cut off again: the first failure stands, nothing commits.
        assert result.returncode == 5
        assert setup.session.read_bytes() == before
        assert commit["committed"] is False and commit["check"] == "summary_reply_invalid"
        if answer == "decline":
            assert "compact_plan, asked again, declined: summary_not_finished" in result.stderr


def test_endless_revisions_fail_and_commit_nothing(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel(
        [{"text": "ok"}] * 3 + [{"text": "<continuation_summary>s</continuation_summary>"}] * 8
    ) as model:
        before = grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", revise=99, log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5, result.stderr
    assert "further summary requests" in result.stderr
    assert setup.session.read_bytes() == before and not setup.backup.exists()
    assert len(model.requests) == 3 + 4  # the first summary and three revisions, then it stops
    commit = [r for r in _log(log) if r["event"] == "after_compact_commit"][-1]
    assert commit["committed"] is False and commit["check"] == "rounds_exceeded"


def test_a_candidate_over_budget_gets_one_later_cut(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        grow(setup, model, turns=4)
        # keep_four leaves too much; the second plan, told why, keeps only two messages.
        setup.behave(fits_over=3500, cut="keep_four", second_cut="keep_two", summary="short", log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    plans = [r for r in _log(log) if r["event"] == "compact_plan"]
    assert len(plans) == 2 and "previous_attempt" not in plans[0]
    assert plans[1]["previous_attempt"]["reason"] == "candidate_over_budget"
    assert plans[1]["previous_attempt"]["cut"] < len(orjson.loads(setup.backup.read_bytes())["messages"])
    commits = [r for r in _log(log) if r["event"] == "after_compact_commit"]
    assert commits[-1]["committed"] is True


def test_a_second_plan_that_is_not_later_is_refused(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        before = grow(setup, model, turns=4)
        setup.behave(fits_over=3500, cut="keep_four", second_cut="keep_four", summary="short", log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5
    assert "is not later" in result.stderr
    assert setup.session.read_bytes() == before
    assert len([r for r in _log(log) if r["event"] == "compact_plan"]) == 2  # never a third
    commit = [r for r in _log(log) if r["event"] == "after_compact_commit"][-1]
    assert commit["committed"] is False and commit["check"] == "candidate_over_budget"


def test_a_declined_plan_is_reported_and_named_in_the_error(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 4) as model:
        before = grow(setup, model)
        setup.behave(fits_over=100, cut="none", log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5
    assert "compaction did not help" in result.stderr and "history[" in result.stderr
    assert "unchanged" in result.stderr
    assert setup.session.read_bytes() == before
    commit = [r for r in _log(log) if r["event"] == "after_compact_commit"][-1]
    assert commit["committed"] is False and commit["check"] == "declined"


def test_too_many_chunks_are_refused(setup, tmp_path):
    with ScriptedModel([{"text": "ok"}] * 4) as model:
        before = grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", chunks=65)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5
    assert "chunks must be a list of 1 to 64" in result.stderr or "chunks" in result.stderr
    assert setup.session.read_bytes() == before


PNG_URL = "data:image/png;base64," + __import__("base64").b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()


def test_retained_images_stay_in_the_compacted_history(setup):
    image = {"type": "image_url", "image_url": {"url": PNG_URL}}
    with ScriptedModel([{"text": "ok"}] * 5) as model:
        grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", summary="state", retained_images=[image])
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    summary = orjson.loads(setup.session.read_bytes())["messages"][1]
    assert summary["content"][0]["type"] == "text" and "state" in summary["content"][0]["text"]
    assert summary["content"][1] == image


def test_invalid_retained_images_commit_nothing(setup):
    bad = {"type": "image_url", "image_url": {"url": "data:image/png;base64,bm90IGFuIGltYWdl"}}
    with ScriptedModel([{"text": "ok"}] * 5) as model:
        before = grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", summary="state", retained_images=[bad])
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5
    assert "returned invalid retained_images" in result.stderr
    assert setup.session.read_bytes() == before


@pytest.mark.parametrize("cap, sent", [(300, 300), (10**6, 4096)])
def test_before_compact_caps_the_summary_reply(setup, cap, sent):
    summary_requests = []

    def step(request):
        if not request.get("tools"):
            summary_requests.append(request)
            return {"text": "<continuation_summary>short</continuation_summary>"}
        return {"text": "ok"}

    with ScriptedModel([step] * 8) as model:
        grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", max_tokens=cap)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    body = summary_requests[0]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == sent  # never above the configured max


def test_an_invalid_summary_cap_commits_nothing(setup):
    with ScriptedModel([{"text": "ok"}] * 5) as model:
        before = grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", max_tokens=0)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5 and "not a positive integer" in result.stderr
    assert setup.session.read_bytes() == before


# -- optional fields only from a worker that declared their extension (SPEC §3.4) -------------


def test_chunks_from_a_compactor_that_did_not_declare_them_are_not_read(setup, tmp_path):
    with ScriptedModel([{"text": "ok"}] * 12) as model:
        before = grow(setup, model, turns=5)
        setup.behave(fits_over=12000, cut="keep_two", chunks=3, extensions=["previous_attempt"])
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5, result.stderr
    assert "chunks was not read: the worker did not declare the 'chunks' extension in hello" in result.stderr
    assert setup.session.read_bytes() == before and not setup.backup.exists()
    assert all(r.body.get("tools") for r in model.requests)  # no summary request was sent


def test_further_after_compact_rounds_only_for_a_compactor_that_declared_them(setup):
    summary_requests, step = _numbered_summaries()
    with ScriptedModel([step] * 12) as model:
        grow(setup, model)
        setup.behave(fits_over=7000, cut="keep_two", prompt="Summarise", revise=2, extensions=[])
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    # SPEC §3.5: after_compact's answer is the final summary; its request is not read.
    assert [r["messages"][0]["content"] for r in summary_requests] == ["Summarise"]
    assert "version 1" in orjson.loads(setup.session.read_bytes())["messages"][1]["content"]


def test_a_candidate_over_budget_is_planned_again_only_for_a_compactor_that_declared_previous_attempt(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        before = grow(setup, model, turns=4)
        conf = {"cut": "keep_four", "second_cut": "keep_two", "summary": "short", "log": str(log)}
        setup.behave(fits_over=3500, extensions=[], **conf)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 5
    assert "does not fit the context budget, even cut later" in result.stderr
    assert setup.session.read_bytes() == before
    plans = [r for r in _log(log) if r["event"] == "compact_plan"]
    assert len(plans) == 1 and "previous_attempt" not in plans[0]


@pytest.mark.parametrize("declared", [True, False])
def test_the_budget_answer_reaches_the_compactor_with_the_extensions_the_budget_declared(setup, tmp_path, declared):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        grow(setup, model)
        extensions = ["cut_estimates", "tool_output_budget"] if declared else ["previous_attempt"]
        setup.behave(fits_over=7000, cut="keep_two", cut_estimates=True, log=str(log), extensions=extensions)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    plan = next(r for r in _log(log) if r["event"] == "compact_plan")
    assert ("cut_estimates" in plan["budget_result"]) is declared
    assert ("tool_output_budget" in plan["budget_result"]) is declared


@pytest.mark.parametrize(("version", "read"), [("0.2.2", True), ("0.2.3", False)])
def test_a_release_of_ours_from_before_the_declarations_is_read_by_its_version(setup, tmp_path, version, read):
    # i-worker-budget 0.2.2 used cut_estimates without declaring it (compatibility.USED_BEFORE_DECLARING);
    # from 0.2.3 on a release is taken at its word.
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        grow(setup, model)
        conf = {"package": "i-worker-budget", "version": version, "extensions": []}
        setup.behave(fits_over=7000, cut="keep_two", cut_estimates=True, log=str(log), **conf)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    plan = next(r for r in _log(log) if r["event"] == "compact_plan")
    assert ("cut_estimates" in plan["budget_result"]) is read


@pytest.mark.parametrize("declared", [True, False])
def test_the_summary_request_overhead_reaches_only_a_compactor_that_declared_it(setup, tmp_path, declared):
    """SPEC §3.4: the core owns the summary request and tells a declaring compactor what its wrapper
    costs, in bytes and at the budget's rate; any other compactor gets no field and keeps its margin."""
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6) as model:
        grow(setup, model)
        extensions = ["cut_estimates", "summary_request_overhead"] if declared else ["cut_estimates"]
        conf = {"cut_estimates": True, "tokens_per_byte": 0.3, "summary": "short", "log": str(log)}
        setup.behave(fits_over=7000, cut="keep_two", extensions=extensions, **conf)
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    prepare = next(r for r in _log(log) if r["event"] == "before_compact")
    if declared:
        assert prepare["summary_request_overhead"] == request_overhead(0.3).as_json()
        assert prepare["summary_request_overhead"]["tokens"] == math.ceil(request_overhead().bytes * 0.3)
    else:
        assert "summary_request_overhead" not in prepare


@pytest.mark.parametrize("declared", [True, False])
def test_a_rejection_is_sent_only_to_a_budget_that_declared_it(setup, tmp_path, declared):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 6, context_window=20000) as model:
        grow(setup, model, turns=2)
        extensions = ["rejection"] if declared else []
        setup.behave(cut="keep_two", summary="short", log=str(log), log_budget=True, extensions=extensions)
        result = setup.run(model.base_url, "next " + LONG * 60)
    assert model.rejections >= 1, result.stderr
    budgets = [r for r in _log(log) if r["event"] == "context_budget"]
    assert any("rejection" in r for r in budgets) is declared
    plans = [r for r in _log(log) if r["event"] == "compact_plan"]
    assert any(r.get("force") for r in plans)  # either way the refusal forces a compaction


# -- nothing to compact yet (no cut can pass SPEC §3.5 step 3) ----------------------------------------


def test_a_first_request_over_a_provisional_budget_asks_no_compactor(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}]) as model:
        setup.behave(fits_over=100, provisional=True, cut="none", log=str(log))
        result = setup.run(model.base_url, "first " + LONG)
    assert result.returncode == 0, result.stderr
    assert "0 compaction(s) of 0 attempt(s)" in result.stderr
    assert not log.exists() or not [r for r in _log(log) if r["event"] in ("compact_plan", "after_compact_commit")]
    assert len(model.requests) == 1  # the server counts it


def test_a_first_request_that_cannot_fit_says_nothing_to_compact_yet(setup, tmp_path):
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "never"}]) as model:
        setup.behave(fits_over=100, cut="none", log=str(log))
        result = setup.run(model.base_url, "first " + LONG)
    assert result.returncode == 5
    assert "nothing to compact yet" in result.stderr and "compaction did not help" not in result.stderr
    assert not log.exists() or not [r for r in _log(log) if r["event"] == "compact_plan"]
    assert not model.requests


def test_fixed_costs_over_the_trigger_are_named_once(setup, tmp_path):
    with ScriptedModel([{"text": "ok"}] * 2) as model:
        setup.behave()
        assert setup.run(model.base_url, "hello").returncode == 0
        policy = {"trigger": 10, "output_reserve": 5, "context_window": 40}
        setup.behave(fits_over=1, cut="none", policy=policy)
        result = setup.run(model.base_url, "again")
    lines = [line for line in result.stderr.splitlines() if "over the compaction trigger 10" in line]
    assert len(lines) == 1, result.stderr
    assert "output reserve 5" in lines[0] and '"profile": "small"' in lines[0] and "40-token window" in lines[0]


# -- like with like (SPEC §3.5 step 6) ------------------------------------------------------------------


def test_a_candidate_is_compared_with_the_original_measured_the_same_way(setup, tmp_path):
    """The original's estimate rests on the server's count (anchored, far below its content), the
    candidate's on density: the original is measured by density too, and the reduction commits."""
    log = tmp_path / "log.ndjson"
    with ScriptedModel([{"text": "ok"}] * 5) as model:
        before = grow(setup, model)
        setup.behave(fits_over=len(before) // 2, anchored_estimate=50, method="density", cut="keep_two", log=str(log))
        result = setup.run(model.base_url, "next " + LONG)
    assert result.returncode == 0, result.stderr
    commit = [r for r in _log(log) if r["event"] == "after_compact_commit"][-1]
    assert commit["committed"] is True, commit
    assert setup.backup.exists()
