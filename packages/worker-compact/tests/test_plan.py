"""Cut selection: validity, tool batches, keep_recent, user alignment (unit + property tests)."""

from __future__ import annotations

from typing import Any

from builders import assistant, summary, system, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact.history import boundaries, is_real_user
from i_compact.plan import NO_USER_ALIGNED, CutChoice, choose_cut, is_valid_cut


def batch(i: int, n_calls: int = 1) -> list[dict[str, Any]]:
    calls = [(f"c{i}_{j}", "shell", "{}") for j in range(n_calls)]
    return [assistant("running", calls)] + [tool(cid, "out") for cid, _, _ in calls]


def test_cut_prefers_latest_real_user_boundary() -> None:
    history = [
        system(),
        user("port the lexer"),
        assistant("a"),
        user("now the parser"),
        assistant("b"),
        *batch(1),
        assistant("c"),
        user("then the docs"),
        assistant("d"),
        assistant("e"),
        assistant("f"),
    ]
    choice = choose_cut(history, keep_recent=4)
    assert choice.cut == 8 and history[8]["content"] == "then the docs" and choice.alignment == "user"


def test_keep_recent_is_a_minimum() -> None:
    history = [system(), user("t"), *[assistant(f"m{i}") for i in range(10)]]
    for keep in (1, 3, 9):
        choice = choose_cut(history, keep)
        assert choice.cut is not None and len(history) - choice.cut >= keep


def test_cut_never_splits_a_tool_batch_and_keeps_it_whole() -> None:
    # keep_recent=2 would land on a tool result: the whole batch is kept instead.
    history = [system(), user("t"), assistant("x"), assistant("y"), *batch(1, n_calls=3)]
    choice = choose_cut(history, keep_recent=2)
    assert choice.cut == 4 and history[4].get("tool_calls")


def test_falls_back_to_assistant_boundary_when_user_cut_compacts_too_little() -> None:
    history = [system(), user("only request")] + [m for i in range(20) for m in batch(i)] + [assistant("done")]
    choice = choose_cut(history, keep_recent=4)
    assert choice.cut is not None and history[choice.cut]["role"] == "assistant"
    assert choice.alignment == NO_USER_ALIGNED  # one request, no later user message: its own code


def test_an_autonomous_run_is_cut_at_an_assistant_step_and_a_repeat_never_pins_the_cut() -> None:
    history = [system(), user("Fix the bug; submit with `echo DONE`.")]
    for step in range(12):
        history += [assistant(f"THOUGHT: step {step}\n\n```bash\nls dir_{step}\n```")]
        history += [user(f"<returncode>0</returncode>\n<output>\nfile_{step}\n</output>")]
    history[9] = user("Please always provide EXACTLY ONE action in triple backticks, found 2 actions.")
    history[17] = user("Please always provide EXACTLY ONE action in triple backticks, found 0 actions.")
    choice = choose_cut(history, keep_recent=4)
    assert choice.cut is not None and history[choice.cut]["role"] == "assistant"
    assert choice.alignment == NO_USER_ALIGNED
    assert len(history) - choice.cut in (4, 5)  # the newest assistant step that keeps keep_recent
    # In a conversation, a repeated reply ("continue" at 6) is not a user-aligned anchor either:
    # the cut is the keep_recent one (7), not the repeat's (6).
    chat = [system(), user("port the lexer"), assistant("a"), user("continue"), assistant("b"), assistant("c")]
    chat += [user("continue"), assistant("d"), assistant("e"), assistant("f"), assistant("g")]
    assert choose_cut(chat, keep_recent=4) == CutChoice(7, "", "assistant")
    distinct = [*chat[:6], user("now the parser"), *chat[7:]]
    assert choose_cut(distinct, keep_recent=4) == CutChoice(6, "", "user")


def test_declines_when_nothing_but_a_previous_summary_would_be_summarised() -> None:
    history = [
        system(),
        summary("<continuation_summary>\nold\n</continuation_summary>"),
        user("go"),
        assistant("a"),
        assistant("b"),
        assistant("c"),
    ]
    assert choose_cut(history, keep_recent=4).reason == "nothing_to_compact"


def test_declines_short_histories() -> None:
    assert choose_cut([system(), user("a"), assistant("b")], keep_recent=4).reason == "history_too_short"
    assert choose_cut([system(), user("a")], keep_recent=1).cut is None


def test_no_safe_cut_inside_one_long_batch() -> None:
    history = [system(), user("t"), *batch(0, n_calls=8)]
    choice = choose_cut(history, keep_recent=2)
    assert choice.cut == 2  # the batch start is the only boundary: the whole batch is retained
    history = [system(), user("t"), *batch(0, n_calls=8)][:1] + batch(0, n_calls=8)
    assert choose_cut(history, keep_recent=2).reason == "no_safe_cut"


def test_image_attachment_after_tool_results_belongs_to_the_batch() -> None:
    attachment = {
        "role": "user",
        "content": [
            {"type": "text", "text": "image from c0_0"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
        ],
    }
    history = [system(), user("t"), assistant("a"), *batch(0), attachment, assistant("b"), assistant("c")]
    ok = boundaries(history)
    assert ok[5] is False and ok[6] is True


# -- property tests --------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    history = [system()]
    units = draw(st.lists(st.sampled_from(["user", "assistant", "batch", "summary"]), min_size=0, max_size=40))
    for i, unit in enumerate(units):
        if unit == "user":
            history.append(user(f"u{i}"))
        elif unit == "assistant":
            history.append(assistant(f"a{i}"))
        elif unit == "summary":
            history.append(summary("<continuation_summary>\ns\n</continuation_summary>"))
        else:
            history.extend(batch(i, draw(st.integers(1, 4))))
    return history


def batch_interiors(history: list[dict[str, Any]]) -> set[int]:
    inside: set[int] = set()
    for i, message in enumerate(history):
        if message.get("tool_calls"):
            j = i + 1
            while j < len(history) and history[j]["role"] == "tool":
                inside.add(j)
                j += 1
    return inside


@settings(max_examples=300, deadline=None)
@given(histories(), st.integers(1, 12))
def test_any_history_gives_a_valid_cut_or_none(history: list[dict[str, Any]], keep: int) -> None:
    choice = choose_cut(history, keep)
    if choice.cut is None:
        assert choice.reason
        return
    cut = choice.cut
    assert 2 <= cut < len(history)
    assert history[cut]["role"] in ("user", "assistant")
    assert cut not in batch_interiors(history)
    assert len(history) - cut >= keep
    assert is_valid_cut(history, cut)
    # something other than old summaries is summarised
    assert any("<continuation_summary>" not in str(m.get("content")) for m in history[1:cut])


def test_a_message_that_holds_only_the_interruption_note_is_no_user_anchor() -> None:
    note = {"type": "text", "text": "[the user interrupted the previous turn after ...]", "_interrupted": True}
    history = [system(), user("task 1"), assistant("a"), *batch(1), {"role": "user", "content": [note]}]
    assert is_real_user(history, 1) and not is_real_user(history, 5)
    history[5] = {"role": "user", "content": [note, {"type": "text", "text": "go on, but skip the tests"}]}
    assert is_real_user(history, 5)
