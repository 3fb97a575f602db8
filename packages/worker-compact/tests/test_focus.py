"""``/compact FOCUS`` (extension ``focus``): the model route asks the summary for it, the local
route keeps it at the top of its summary; both answer ``focus_used: true``, and the summary cache
never serves a summary made for another focus."""

from __future__ import annotations

from typing import Any

from test_worker import call, configure, history, plan

from i_compact.worker import worker


def _before(dirs: dict[str, str], **extra: Any) -> dict[str, Any]:
    messages = history()[1:6]
    data = {"messages": messages, "cut": 6, "state": {}, "model": "m", "budget": {}, **extra}
    return call("before_compact", data, dirs)["data"]


def test_the_compactor_declares_the_focus_extension() -> None:
    assert "focus" in worker.extensions


def test_model_mode_puts_the_focus_in_the_summary_prompt(dirs: dict[str, str]) -> None:
    data = _before(dirs, focus="  the failing\n parser tests  ")
    assert data["focus_used"] is True
    assert data["prompt"].count("The user asked this summary to focus on: the failing parser tests") == 1
    assert "focus_used" not in _before(dirs)  # no focus: nothing said about it


def test_a_focus_is_redacted_and_bounded(dirs: dict[str, str]) -> None:
    data = _before(dirs, focus="keep OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx1234 out " + "x" * 5000)
    assert "sk-abcdefghijklmnopqrstuvwx1234" not in data["prompt"]
    assert "x" * 2001 not in data["prompt"]


def test_the_summary_cache_keeps_summaries_of_different_focuses_apart(dirs: dict[str, str]) -> None:
    first = _before(dirs, focus="the parser")
    call("after_compact", {"summary": "parser facts", "state": first["state"]}, dirs)
    assert "summary" in _before(dirs, focus="the parser")
    other = _before(dirs, focus="the lexer")
    assert "summary" not in other and "focus on: the lexer" in other["prompt"]


def test_local_mode_keeps_the_focus_at_the_top_of_its_summary(dirs: dict[str, str]) -> None:
    configure(dirs, mode="local")
    planned = plan(dirs, history(30), focus="the docs")["data"]
    cut = planned["cut"]
    data = call(
        "before_compact",
        {"messages": history(30)[1:cut], "cut": cut, "state": planned["state"], "focus": "the docs"},
        dirs,
    )["data"]
    assert data["focus_used"] is True
    assert data["summary"].startswith(
        "<continuation_summary>\nFocus the user asked this compaction to keep (/compact): the docs\n"
    )
