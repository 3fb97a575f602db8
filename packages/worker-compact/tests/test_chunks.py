"""Chunked summaries: a prepared transcript too large for one summary request (before_compact)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from builders import assistant, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import chunks
from i_compact.prompt import DEFAULT_PROMPT
from i_compact.worker import worker
from i_protocol.summary import EXTENSION, OLDER_CORE_MARGIN, Overhead, request_overhead

MARKER = re.compile(r"\[\.\.\. (\d+) chars omitted \.\.\.\]")


def call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    return worker.handle({"id": 1, "event": event, "data": data, "paths": dirs, "workspace": "/w"})


def long_prefix(batches: int = 40) -> list[dict[str, Any]]:
    messages = [user("Port the lexer to Rust. Never touch CI.")]
    for i in range(batches):
        messages += [
            assistant(f"step {i}: " + "reasoning " * 20, [(f"c{i}", "shell", '{"cmd":"cargo test"}')]),
            tool(f"c{i}", f"job_{i:04d} running\n" + f"line {i}\n" * 40),
        ]
    messages.append(assistant("Next: fix E0425."))
    return messages


def state_for(capacity: int, reserve: int, rate: float = 1.0) -> dict[str, Any]:
    return {"request": {"capacity": capacity, "output_reserve": reserve, "tokens_per_byte": rate}}


def before(dirs: dict[str, str], messages: list[dict[str, Any]], state: dict[str, Any], **extra: Any) -> dict[str, Any]:
    data = {"messages": messages, "cut": len(messages) + 1, "state": state, "model": "m", "budget": {}, **extra}
    response = call("before_compact", data, dirs)
    assert "data" in response, response
    return response["data"]


def prepared_whole(dirs: dict[str, str], messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The single-request preparation (no request budget known), for comparison."""
    return before(dirs, messages, {})


def rejoined(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The messages of ``parts`` in order, each divided message joined again."""
    flat: list[dict[str, Any]] = []
    for message in (m for part in parts for m in part):
        content = message.get("content")
        if isinstance(content, str) and content.startswith(chunks.CONTINUED) and flat:
            head = flat.pop()
            assert head["content"].endswith(chunks.CONTINUES)
            joined = head["content"].removesuffix(chunks.CONTINUES) + content.removeprefix(chunks.CONTINUED)
            message = {**message, "content": joined}
        flat.append(message)
    return flat


def limits(state: dict[str, Any], first_prompt: str, later_prompt: str) -> tuple[int, int]:
    budget = chunks.request_budget(state["request"])
    assert budget is not None
    return (
        chunks.transcript_limit(budget, first_prompt, summary_so_far=False)[1],
        chunks.transcript_limit(budget, later_prompt)[1],
    )


def test_a_prefix_needing_three_requests_is_chunked_in_order(dirs: dict[str, str]) -> None:
    messages = long_prefix()
    whole = prepared_whole(dirs, messages)
    size = chunks.transcript_bytes(whole["messages"])
    prompt_tokens = len(whole["prompt"].encode())
    # First request: the prompt plus ~45% of the transcript; later ones carry a 2,000-token
    # summary so far as well, so three requests are needed.
    capacity = prompt_tokens + 64 + int(size * 0.45)
    state = state_for(capacity, 2000)
    data = before(dirs, messages, state)
    assert "prompt" not in data and "messages" not in data
    parts = data["chunks"]
    assert len(parts) == 3
    assert parts[0]["prompt"] == whole["prompt"] == DEFAULT_PROMPT.replace("{{workspace}}", "/w")
    for part in parts[1:]:
        assert part["prompt"].startswith(whole["prompt"]) and "<summary_so_far>" in part["prompt"]
        assert "Update the summary so far" in part["prompt"]
    first, later = limits(state, parts[0]["prompt"], parts[1]["prompt"])
    assert chunks.transcript_bytes(parts[0]["messages"]) <= first
    for part in parts[1:]:
        assert chunks.transcript_bytes(part["messages"]) <= later
    budget = chunks.request_budget(state["request"])
    assert budget is not None
    for index, part in enumerate(parts):
        # In tokens, as the core checks it: prompt + (summary so far) + transcript + margin.
        carried = 0 if index == 0 else budget.output_reserve
        prompt = len(part["prompt"].encode())
        assert prompt + carried + chunks.transcript_bytes(part["messages"]) + 64 <= capacity
    # In order, every prepared message exactly once (a divided one in two parts), nothing shortened.
    assert rejoined([part["messages"] for part in parts]) == whole["messages"]
    # No tool call is separated from its result (all batches are small).
    for part in parts:
        assert part["messages"][-1]["role"] != "assistant" or not part["messages"][-1].get("tool_calls")
    attempt = data["state"]["lastAttempt"]
    assert attempt["reason"] == "model_chunks_prepared" and attempt["chunks"] == 3
    assert data["state"]["chunking"]["chunks"] == 3 and data["state"]["chunking"]["shortenedMessages"] == 0


def _first_chunk_bytes(data: dict[str, Any], wrapper: int) -> int:
    return chunks.transcript_bytes(data["chunks"][0]["messages"], wrapper)


def test_chunks_are_packed_with_the_wrapper_size_the_core_sends(dirs: dict[str, str]) -> None:
    """SPEC §3.4: before_compact's summary_request_overhead is what the core's wrapper costs in each
    request; the chunks are packed with it, not with a guess."""
    messages = long_prefix()
    whole = prepared_whole(dirs, messages)
    capacity = len(whole["prompt"].encode()) + 64 + int(chunks.transcript_bytes(whole["messages"]) * 0.45)
    state = state_for(capacity, 2000)
    for overhead in (request_overhead(), Overhead(bytes=6000, tokens=6000)):
        data = before(dirs, messages, state, **{EXTENSION: overhead.as_json()})
        assert data["state"]["chunking"]["wrapper"] == overhead.bytes
        first, later = limits(state, data["chunks"][0]["prompt"], data["chunks"][1]["prompt"])
        assert _first_chunk_bytes(data, overhead.bytes) <= first
        for part in data["chunks"][1:]:
            assert chunks.transcript_bytes(part["messages"], overhead.bytes) <= later
        assert rejoined([part["messages"] for part in data["chunks"]]) == whole["messages"]
    small = before(dirs, messages, state, **{EXTENSION: request_overhead().as_json()})
    large = before(dirs, messages, state, **{EXTENSION: Overhead(bytes=6000, tokens=6000).as_json()})
    # What the wrapper takes, the transcript cannot: about 5,500 bytes less of it in the first request
    # (less a part of a message that did not fit either way).
    assert _first_chunk_bytes(large, 0) < _first_chunk_bytes(small, 0) - 4000


@pytest.mark.parametrize("sent", [None, {"bytes": "485"}, {"tokens": 12}])
def test_without_the_field_a_compactor_keeps_the_margin_of_older_cores(dirs: dict[str, str], sent: Any) -> None:
    """A host that sends no summary_request_overhead (a third party's, or an older core): 512 bytes, as before."""
    messages = long_prefix()
    whole = prepared_whole(dirs, messages)
    capacity = len(whole["prompt"].encode()) + 64 + int(chunks.transcript_bytes(whole["messages"]) * 0.45)
    state = state_for(capacity, 2000)
    extra = {} if sent is None else {EXTENSION: sent}
    data = before(dirs, messages, state, **extra)
    assert data["state"]["chunking"]["wrapper"] == OLDER_CORE_MARGIN.bytes == 512
    first, _later = limits(state, data["chunks"][0]["prompt"], data["chunks"][1]["prompt"])
    assert _first_chunk_bytes(data, 512) <= first


def test_a_provisional_rate_counts_the_wrapper_in_tokens(dirs: dict[str, str]) -> None:
    messages = long_prefix()
    state = {"request": {"capacity": 8000, "output_reserve": 500, "tokens_per_byte": 1.0, "provisional": True}}
    sent = before(dirs, messages, state, **{EXTENSION: Overhead(bytes=485, tokens=400).as_json()})
    assert sent["state"]["chunking"]["wrapper"] == 400
    assert before(dirs, messages, state)["state"]["chunking"]["wrapper"] == OLDER_CORE_MARGIN.tokens


def test_a_single_oversized_message_is_shortened(dirs: dict[str, str]) -> None:
    body = "HEAD-OF-PASTE " + "0123456789" * 5000 + " TAIL-OF-PASTE"
    messages = [*long_prefix(6), user(body), assistant("ok")]
    whole = prepared_whole(dirs, messages)
    prompt_tokens = len(whole["prompt"].encode())
    state = state_for(prompt_tokens + 64 + 8000 + 1500, 1500)
    data = before(dirs, messages, state)
    parts = data["chunks"]
    first, later = limits(state, parts[0]["prompt"], parts[-1]["prompt"])
    for index, part in enumerate(parts):
        assert chunks.transcript_bytes(part["messages"]) <= (first if index == 0 else later)
    shortened = [m for part in parts for m in part["messages"] if MARKER.search(m["content"])]
    assert len(shortened) == 1 and data["state"]["chunking"]["shortenedMessages"] == 1
    text = shortened[0]["content"]
    assert text.startswith("HEAD-OF-PASTE") and text.endswith("TAIL-OF-PASTE")
    omitted = int(MARKER.search(text).group(1))
    assert omitted == len(body) - len(text) + len(MARKER.search(text).group(0)) + 2
    # Every other prepared message is there, unchanged and in order.
    flat = [m for part in parts for m in part["messages"]]
    assert len(flat) == len(whole["messages"])
    assert [m for m in flat if m is not shortened[0]] == [m for m in whole["messages"] if m["content"] != body]


def test_a_tool_result_larger_than_a_chunk_keeps_its_header_and_fences(dirs: dict[str, str]) -> None:
    huge = "\n".join(f"row {i}: " + "x" * 60 for i in range(3000))
    messages = [user("go"), assistant("", [("c1", "read", '{"path":"big.txt"}')]), tool("c1", huge), assistant("ok")]
    whole = prepared_whole(dirs, messages)
    message = chunks.shrink(whole["messages"][2], 3000)
    assert chunks.message_bytes(message) <= 3000
    lines = message["content"].split("\n")
    assert lines[0].startswith("Result of tool call c1 (read). Untrusted data")
    assert lines[1].startswith("```") and lines[-1] == lines[1][: len(lines[-1])] and set(lines[-1]) == {"`"}
    assert MARKER.search(message["content"])


def test_many_tool_calls_are_cut_to_fit() -> None:
    calls = [(f"call_{i}", "write", f'{{"path":"f{i}","content":"{"y" * 1500}"}}') for i in range(40)]
    message = assistant("writing", calls)
    shrunk = chunks.shrink(message, 4000)
    assert chunks.message_bytes(shrunk) <= 4000
    assert shrunk["content"] == "writing"  # small content is not the bulk: left alone
    assert [c["id"] for c in shrunk["tool_calls"]] == [f"call_{i}" for i in range(40)]
    assert all(MARKER.search(c["function"]["arguments"]) for c in shrunk["tool_calls"])
    # Too many calls for the limit even without arguments: the newest go, and it says how many.
    many = assistant("x" * 10000, [(f"call_{i:04d}" * 10, "write", "{}") for i in range(400)])
    shrunk = chunks.shrink(many, 4000)
    assert chunks.message_bytes(shrunk) <= 4000
    kept = len(shrunk["tool_calls"])
    assert 0 < kept < 400 and f"[... {400 - kept} more tool calls omitted ...]" in shrunk["content"]
    assert MARKER.search(shrunk["content"])


def test_one_request_when_it_fits_keeps_todays_shape(dirs: dict[str, str]) -> None:
    messages = long_prefix(5)
    whole = prepared_whole(dirs, messages)
    data = before(dirs, messages, state_for(10**6, 4000))
    assert "chunks" not in data
    assert data["prompt"] == whole["prompt"] and data["messages"] == whole["messages"]
    assert data["summary_images"] == whole["summary_images"] == []
    assert data["state"]["lastAttempt"]["reason"] == "model_prompt_prepared"
    assert "chunking" not in data["state"]


def test_no_room_for_a_chunk_is_a_clear_error(dirs: dict[str, str]) -> None:
    messages = long_prefix()
    response = call(
        "before_compact",
        {"messages": messages, "cut": len(messages) + 1, "state": state_for(4000, 3000), "model": "m"},
        dirs,
    )
    assert "summary_request_too_small" in response["error"] and "output_reserve 3000" in response["error"]


def test_describe_images_are_kept_instead_when_chunked(dirs: dict[str, str]) -> None:
    png = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    messages = [{"role": "user", "content": [{"type": "text", "text": "see this"}, png]}, *long_prefix()]
    whole = before(dirs, messages, {}, budget={"images": "describe"})
    capacity = len(whole["prompt"].encode()) + 64 + chunks.transcript_bytes(whole["messages"]) // 2
    data = before(dirs, messages, state_for(capacity, 1000), budget={"images": "describe"})
    assert len(data["chunks"]) >= 2
    assert data["summary_images"] == [] and data["retained_images"] == [png]
    assert "(kept after compaction)" in data["chunks"][0]["messages"][0]["content"]
    assert "describe -> keep" in data["state"]["images_downgraded"]


@pytest.mark.parametrize("rate", [0.25, 0.5, 1.0])
def test_split_never_exceeds_a_limit(rate: float) -> None:
    messages = [
        {"role": "user", "content": "ü" * (i * 97 % 3000)} if i % 3 else {"role": "assistant", "content": "a" * 9000}
        for i in range(60)
    ]
    budget = chunks.RequestBudget(12000, 1000, rate)
    _, first = chunks.transcript_limit(budget, "p" * 500, summary_so_far=False)
    _, later = chunks.transcript_limit(budget, "p" * 900)
    result = chunks.split(messages, first, min(first, later))
    for size, limit, part in zip(result.sizes, result.limits, result.chunks, strict=True):
        assert size == chunks.transcript_bytes(part) <= limit
    assert len(rejoined(result.chunks)) == len(messages)


_texts = st.text(alphabet=st.sampled_from("ab \n`ü漢😀"), max_size=6000)


@st.composite
def prepared_messages(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for i in range(draw(st.integers(1, 30))):
        kind = draw(st.sampled_from(["user", "assistant", "batch"]))
        if kind == "batch":
            calls = [(f"c{i}_{j}", "shell", draw(_texts)) for j in range(draw(st.integers(1, 3)))]
            messages.append(assistant(draw(_texts), calls))
            messages += [
                tool(cid, "Result of tool call.\n```untrusted\n" + draw(_texts) + "\n```") for cid, _, _ in calls
            ]
        else:
            messages.append({"role": kind, "content": draw(_texts)})
    return messages


@settings(max_examples=150, deadline=None)
@given(prepared_messages(), st.integers(chunks.MIN_CHUNK_BYTES, 20000), st.integers(chunks.MIN_CHUNK_BYTES, 20000))
def test_any_transcript_splits_within_its_limits_in_order(
    messages: list[dict[str, Any]], first: int, later: int
) -> None:
    first, later = max(first, later), min(first, later)
    result = chunks.split(messages, first, later)
    assert result.limits[:1] in ([first], [])
    assert all(limit == later for limit in result.limits[1:])
    for size, limit, part in zip(result.sizes, result.limits, result.chunks, strict=True):
        assert size == chunks.transcript_bytes(part) <= limit
    flat = rejoined(result.chunks)
    assert len(flat) == len(messages)
    for original, placed in zip(messages, flat, strict=True):
        assert (
            placed is original
            or placed == original
            or MARKER.search(placed.get("content") or "")
            or placed.get("tool_calls") != original.get("tool_calls")
        )
        assert placed.get("role") == original.get("role")


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=3000))
def test_an_estimate_never_counts_more_than_the_bytes(text: str) -> None:
    # So a message shortened to fit in bytes fits in estimated tokens too.
    assert 0 <= chunks.estimate_tokens(text) <= chunks.utf8_len(text)


def test_the_estimate_counts_letter_runs_by_five_and_non_ascii_by_its_bytes() -> None:
    assert chunks.estimate_tokens("Hello world.") == 3
    assert chunks.estimate_tokens("internationalization") == 4
    assert chunks.estimate_tokens("12345") == 2
    assert chunks.estimate_tokens("中文") == 6


def test_a_provisional_rate_packs_by_estimated_tokens(dirs: dict[str, str]) -> None:
    messages = long_prefix()
    whole = prepared_whole(dirs, messages)
    capacity = len(whole["prompt"].encode()) + 64 + chunks.transcript_bytes(whole["messages"]) // 6
    by_bytes = before(dirs, messages, state_for(capacity, 500))
    state = state_for(capacity, 500)
    state["request"]["provisional"] = True
    by_tokens = before(dirs, messages, state)
    assert by_tokens["state"]["chunking"]["unit"] == "estimated tokens (provisional rate)"
    assert len(by_tokens["chunks"]) < len(by_bytes["chunks"])
    budget = chunks.request_budget(state["request"])
    assert budget is not None and budget.provisional
    first, later = limits(state, by_tokens["chunks"][0]["prompt"], by_tokens["chunks"][1]["prompt"])
    for index, part in enumerate(by_tokens["chunks"]):
        assert budget.transcript_size(part["messages"]) <= (first if index == 0 else later)
    assert rejoined([part["messages"] for part in by_tokens["chunks"]]) == whole["messages"]


def test_compact_plan_says_when_the_budget_rate_is_provisional(dirs: dict[str, str]) -> None:
    history = [{"role": "system", "content": "s"}, *long_prefix(), user("next"), assistant("ok")]
    budget = {"capacity": 8000, "output_reserve": 500, "recommend_compact": True, "fits": False}
    for provisional in (False, True):
        data = {"history": history, "cut": None, "budget_result": {**budget, "provisional": provisional}}
        planned = call("compact_plan", data, dirs)["data"]
        assert planned["state"]["request"].get("provisional", False) is provisional


def test_a_message_is_divided_to_fill_a_request() -> None:
    messages = [user("alpha " * 1000), user("beta " * 1000), assistant("done")]
    result = chunks.split(messages, 9000, 9000)
    assert result.divided == 1 and len(result.chunks) == 2
    assert result.sizes[0] >= 0.95 * 9000
    assert result.chunks[0][-1]["content"].endswith(chunks.CONTINUES)
    assert result.chunks[1][0]["content"].startswith(chunks.CONTINUED)
    assert rejoined(result.chunks) == messages
