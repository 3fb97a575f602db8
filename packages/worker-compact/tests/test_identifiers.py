"""Local mode's ledger of ids and paths: the rule, carried across generations, bounded, no secrets."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import orjson
from builders import assistant, summary, system, tool, user
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import identifiers
from i_compact.identifiers import collect, find
from i_compact.ledger import Ledger
from i_compact.local_summary import local_summary
from i_compact.redact import gate_free
from i_compact.request_memory import forget
from i_compact.state_record import parse_record, record_text, render
from i_compact.transcript import analyse
from i_compact.worker import worker
from i_protocol.testing import scaled

PROSE = (
    "The budget worker estimates the context before each request, and in 2024 the v2 planner "
    "learned a 40-char limit on a 2-core box with 10-20ms of jitter (utf8, sha256, python3, "
    "dated 2024-01-15T10:00Z, and/or 12/31/2024, 1/2.5 of it; see /compact). "
)


def marker(turn: int, kind: str = "english") -> str:
    return f"ID-{kind}-{turn}-{hashlib.sha256(f'{kind}{turn}'.encode()).hexdigest()[:8]}"


def note(turn: int, size: int = 6000, kind: str = "english") -> str:
    """A long user turn planting one marker id and one path near its start (like the long task)."""
    path = f"src/{('budget', 'compact', 'core', 'memory')[turn % 4]}/{('plan', 'store')[turn % 2]}_{turn}.py"
    body = (PROSE * (size // len(PROSE) + 1))[:size]
    return f"Turn {turn}: Record {marker(turn, kind)} for {path}. {body}"


def ledger(summary: str) -> list[str]:
    """The modified paths and the ids and paths of the summary's state record."""
    record = parse_record(summary)
    return [*record.paths, *record.ids] if record is not None else []


def summarise(messages: list[dict[str, Any]], **bounds: int) -> str:
    return local_summary(messages, analyse(messages, facts_only=True), images="keep", **({"max_chars": 8000} | bounds))


# -- the rule -----------------------------------------------------------------------------------


def test_ids_and_paths_the_rule_accepts() -> None:
    text = (
        "Record ID-english-12-34dcf2bd for src/budget/store.py. uuid 123e4567-e89b-12d3-a456-426614174000, "
        "sha 34dcf2bd9a0c, short sha 1a2b3c4, ULID 01ARZ3NDEKTSV4RRFFQ69G5FAV, ticket PROJ-1234, tx_0042, "
        "job_777abc; call_abc123: toolu_01ABCdef234. Files ./run.sh ../lib/x ~/notes.md /etc/hosts "
        ".github/workflows/ci.yml tests/test_token_3.py::test_x, a/b.tar.gz and src/x.py. "
        "Short ids (issue 17): run_1, tx_9, utf-8; codes in capitals HAT136, EQ1G6C, 4WQ150; dates 2024-05-20."
    )
    assert [token for token, _ in find(text)] == [
        "ID-english-12-34dcf2bd",
        "src/budget/store.py",
        "123e4567-e89b-12d3-a456-426614174000",
        "34dcf2bd9a0c",
        "1a2b3c4",
        "01ARZ3NDEKTSV4RRFFQ69G5FAV",
        "PROJ-1234",
        "tx_0042",
        "job_777abc",
        "call_abc123",
        "toolu_01ABCdef234",
        "./run.sh",
        "../lib/x",
        "~/notes.md",
        "/etc/hosts",
        ".github/workflows/ci.yml",
        "tests/test_token_3.py",
        "a/b.tar.gz",
        "src/x.py",
        "run_1",
        "tx_9",
        "utf-8",
        "HAT136",
        "EQ1G6C",
        "4WQ150",
        "2024-05-20",
    ]


def test_prose_words_and_numbers_alone_are_not_identifiers() -> None:
    words = (
        "2024 1_000_000 42 v2 e2e sha256 python3 base64 md5sum x86 40-char 2-core 10-20ms "
        "3-way-merge 64_bit 2024-13-45 2024-01-15T10:00:00Z and/or km/h 12/31/2024 1/2.5 /compact "
        "/accept N/A tx_ AbCdEf123456XyZ90 deadbeef decade https://example.com/a/b.html "
        "www_example.com notes_12.md run_123.log x86_64.so A1 Hat136 7447 555-1234"
    )
    assert find(words) == []
    assert find(PROSE * 50) == []


def test_quoted_tokens_in_text_are_data_and_a_prose_mention_wins() -> None:
    found = dict(find('{"id": "3fa85f64-5717-4562-b3fc-2c963f66afa6", "path": "src/a_1.py"} then job_42abc'))
    assert found == {"3fa85f64-5717-4562-b3fc-2c963f66afa6": True, "src/a_1.py": True, "job_42abc": False}
    items = collect(['"job_42abc" first', "then job_42abc in prose", 'and "tx_0007"'])
    assert items == ["job_42abc", '"tx_0007"']


def test_tool_call_arguments_short_strings_not_file_bodies() -> None:
    body = "# notes\nID-inbody-1-abcdef12 lives in src/hidden_1.py\n" * 20
    messages = [
        user("Write the notes."),
        assistant("", [("c1", "write_file", orjson.dumps({"path": "docs/notes_1.md", "content": body}).decode())]),
        tool("c1", "ok"),
        assistant("", [("c2", "shell", '{"cmd":"pytest tests/test_store_2.py -k job_42abc"}')]),
        tool("c2", "1 passed"),
        assistant("", [("c3", "workspace_edit", {"action": "commit", "transaction_id": "tx_0042"})]),
        tool("c3", "ok"),
        assistant("done"),
    ]
    items = ledger(summarise(messages))
    assert items == ["docs/notes_1.md", "tests/test_store_2.py", "job_42abc", "tx_0042"]  # not data: no quotes
    assert "ID-inbody-1-abcdef12" not in items and "src/hidden_1.py" not in items


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ID-x-", "job_", "tx_", "src/m_", "./s/", "/tmp/w/", "PROJ-"]),
            st.integers(min_value=1000, max_value=10**9),
            st.booleans(),
        ),
        max_size=30,
    )
)
def test_the_ledger_reads_back_as_itself(specs: list[tuple[str, int, bool]]) -> None:
    # What one generation writes is exactly what the next one reads: same tokens, same tiers.
    tokens = [f"{prefix}{n}{'.py' if '/' in prefix else 'a'}" for prefix, n, _ in specs]
    pieces = [f'"{token}"' if flag else token for token, (_, _, flag) in zip(tokens, specs, strict=True)]
    items = collect(pieces)
    assert collect(["\n- ".join(items)]) == items
    assert [item.strip('"') for item in items] == list(dict.fromkeys(tokens))
    for item in items:  # data only when every mention was quoted
        assert item.startswith('"') == all(p.startswith('"') for p in pieces if p.strip('"') == item.strip('"'))


def test_scanning_is_linear_on_adversarial_runs() -> None:
    n = 200_000
    texts = ["a/" * n, "a." * n + "/", "a1-" * n, "/a" * n, "./" + "a/" * n, "a1/" * n, '"' * n, "x1" * n]
    for text in texts:
        start = time.perf_counter()
        find(text)
        assert time.perf_counter() - start < scaled(1.0), text[:8]  # a guard against quadratic time, not a timing


# -- secrets ------------------------------------------------------------------------------------

SECRETS = (
    "sk-proj-abcdefghijklmnop1234567890",
    "hunter2_abc123",
    "hunter2_x1",
    "abc_1234567",
    "AbC_123456789",
    "pa55_word9",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "xoxb-1234-5678-abcdefghij",
    "abcdef_123456789012",
    "zz_9f8e7d6c5b4a",
)


def secret_message() -> str:
    return (
        "Deploy job_42abc to src/deploy/run.py with key sk-proj-abcdefghijklmnop1234567890, "
        "password=hunter2_abc123, then `login --password hunter2_x1 --token abc_1234567`. "
        'Config: {"API_KEY": "AbC_123456789"} and https://bob:pa55_word9@db.example.com/x.sql '
        "AWS AKIAIOSFODNN7EXAMPLE, gh ghp_abcdefghijklmnopqrstuvwxyz0123456789, "
        "slack xoxb-1234-5678-abcdefghij, Authorization: Bearer abcdef_123456789012.\n"
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq 1a2b3c4d5e zz_9f8e7d6c5b4a\n-----END PRIVATE KEY-----\n"
        "Also ticket PROJ-1234."
    )


# Flag values (``--password x``) are beyond redact.py's ``name=value`` rule: only the ledger
# drops them (the quoted request keeps them; see the README's Secrets section).
FLAG_VALUES = ("hunter2_x1", "abc_1234567")


def test_secrets_are_never_carried() -> None:
    messages = [
        user(secret_message()),
        assistant("On it.", [("c1", "shell", '{"cmd":"deploy", "secret": "zz_9f8e7d6c5b4a"}')]),
    ]
    messages += [tool("c1", "ok"), user("next"), assistant("done")]
    summary = summarise(messages)
    section = record_text(summary) or ""
    assert ledger(summary) == ["job_42abc", "src/deploy/run.py", "PROJ-1234"]
    for value in SECRETS:
        assert value not in section, value
        assert value in FLAG_VALUES or value not in summary, value


def test_a_secret_in_one_message_does_not_hide_the_next_ones() -> None:
    # Redaction runs per message: an unclosed key block redacts to its end, not to the end of all.
    pieces = ["-----BEGIN PRIVATE KEY-----\nMIIEvQ 1a2b3c4d5e6f", "then job_42abc and src/a_1.py"]
    assert collect(pieces) == ["job_42abc", "src/a_1.py"]
    assert identifiers.is_identifier("AKIAIOSFODNN7EXAMPLE") is False  # a key shape, even alone


def test_wide_lower_case_does_not_shift_which_message_is_redacted() -> None:
    # "İ".lower() is two characters: the gate positions must still name the right message.
    pieces = ["İstanbul " * 50, "ok job_42abc", "export MY_TOKEN_VALUE=abc_9f8e7d6c5b4a", "then tx_0042"]
    assert collect(pieces) == ["job_42abc", "tx_0042"]


# -- bounds -------------------------------------------------------------------------------------


def test_the_bound_holds_and_says_how_many_were_dropped() -> None:
    messages = [user(f"Record {marker(i)} and src/m/f_{i}.py now.") for i in range(3000)] + [assistant("ok")]
    summary = summarise(messages, max_chars=4000, critical_chars=12000, max_bytes=12000)
    assert len(summary.encode()) <= 12000
    record = parse_record(summary)
    assert record is not None
    assert record.dropped["id"] + len(record.ids) == 6000  # every id and path is kept or counted
    assert record.ids[-2:] == [marker(2999), "src/m/f_2999.py"]  # the newest are kept
    assert record.request == f"Record {marker(2999)} and src/m/f_2999.py now."  # the rest of the record stays


def test_data_goes_before_prose_when_over_the_bound() -> None:
    ids = [f"ID-a-{i}-abcdef12" for i in range(10)]
    data = [f"{i:08x}-aaaa-bbbb-cccc-0123456789ab" for i in range(200)]
    text = render(Ledger(ids=ids, data=data), 1200)
    record = parse_record(text)
    assert record is not None and len(text.encode()) <= 1200
    assert record.ids == ids  # every prose item stays; the data that stays is the newest
    assert record.data == data[len(data) - len(record.data) :] and 0 < len(record.data) < 200
    assert record.dropped == {"data": 200 - len(record.data)}
    assert render(record, 10_000) == text  # read back, it renders the same (counts included)


def test_wide_characters_elsewhere_do_not_push_the_ledger_out() -> None:
    chinese = "预算工作器在每次模型请求之前估算上下文的大小。" * 120
    messages = []
    for turn in range(12):
        messages += [
            user(f"Turn {turn}: Record {marker(turn, 'chinese')} for src/core/p_{turn}.py. {chinese}"),
            assistant("ok"),
        ]
    summary = summarise(messages, max_chars=4000, critical_chars=4800, max_bytes=4800)
    assert len(summary.encode()) <= 4800
    items = ledger(summary)
    for turn in range(12):
        assert marker(turn, "chinese") in items and f"src/core/p_{turn}.py" in items
    assert "more chars not kept]" in summary  # the latest request gave way, not the ids


# -- generations through the handlers -----------------------------------------------------------

BUDGET = {"fits": False, "estimate": 50000, "comparable_estimate": 48000, "capacity": 60000, "recommend_compact": True}


def call(event: str, data: dict[str, Any], dirs: dict[str, str]) -> dict[str, Any]:
    response = worker.handle({"id": 1, "event": event, "data": data, "paths": dirs, "workspace": "/w"})
    assert "data" in response, response
    return response["data"]


def compact(history: list[dict[str, Any]], dirs: dict[str, str]) -> tuple[str, int]:
    """compact_plan + before_compact in local mode: the summary and the cut."""
    planned = call("compact_plan", {"model": "m", "history": history, "cut": None, "budget_result": BUDGET}, dirs)
    cut = planned["cut"]
    assert isinstance(cut, int)
    prepared = call("before_compact", {"messages": history[1:cut], "cut": cut, "state": planned["state"]}, dirs)
    return prepared["summary"], cut


def turns(first: int, count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    for turn in range(first, first + count):
        messages += [user(note(turn)), assistant(f"Done with turn {turn}; noted.")]
    return messages


def test_two_generations_keep_the_first_generations_ids(dirs: dict[str, str]) -> None:
    Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": "local", "keep_recent": 4}))
    history = [system(), *turns(0, 14)]
    first, cut = compact(history, dirs)
    assert all(marker(t) in ledger(first) for t in range(12))  # history[1:cut] holds turns 0-11
    # The core commits system + summary (an untrusted user message) + suffix; the task goes on.
    summary_message = user("The earlier part of this conversation was compacted.\n\n" + first)
    history = [system(), summary_message, *history[cut:], *turns(14, 14)]
    second, _ = compact(history, dirs)
    items = ledger(second)
    for t in range(26):
        assert marker(t) in items, t
        assert f"_{t}.py" in "\n".join(items), t
    assert items.index(marker(0)) < items.index(marker(13)) < items.index(marker(20))  # oldest first
    third, _ = compact([system(), summary(second), *turns(28, 6)], dirs)  # (26, 27 were the suffix)
    assert all(marker(t) in ledger(third) for t in (*range(26), *range(28, 32)))


def test_a_model_written_summary_is_read_for_ids_too() -> None:
    model_summary = (
        "<continuation_summary>\nRecorded ids: ID-x-1-abcdef12, job_777abc in src/a_1.py\n</continuation_summary>"
    )
    items = ledger(summarise([summary(model_summary), user("go on with tx_0042"), assistant("ok")]))
    assert items == ["ID-x-1-abcdef12", "job_777abc", "src/a_1.py", "tx_0042"]


def test_the_omission_count_is_carried_to_the_next_generation() -> None:
    messages = [user(f"Record {marker(i)} now.") for i in range(2000)] + [assistant("ok")]
    first = summarise(messages, max_chars=2000, critical_chars=6000, max_bytes=6000)
    dropped = parse_record(first).dropped["id"]  # type: ignore[union-attr]
    block = f"<continuation_summary>\n{first}\n</continuation_summary>"
    second = summarise(
        [summary(block), *[user(f"Record {marker(i)} too.") for i in range(2000, 3000)], assistant("ok")],
        max_chars=2000,
        critical_chars=6000,
        max_bytes=6000,
    )
    record = parse_record(second)
    assert record is not None
    total = record.dropped["id"]
    assert total + len(record.ids) == 3000 and total > dropped
    assert record.ids[-1] == marker(2999)


_PIECE_WORDS = ["tx_0042", "src/a.py", "token", " ", "\n", "key", "=", "abc_123456", "password", ": ", '"', "ghp_"]
_PIECE_WORDS += ["x" * 36, "sk-proj-" + "a1B2" * 8, "job_7f3a9c21", "Bearer ", "AKIA" + "Q" * 16, "é", "İ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PIECE_WORDS), max_size=8).map("".join), max_size=6), st.data())
def test_pieces_known_free_of_gate_words_scan_as_any_other(pieces: list[str], data: st.DataObject) -> None:
    try:
        expected = identifiers.scan(pieces)
        forget()
        for piece in data.draw(st.lists(st.sampled_from(pieces), max_size=len(pieces))) if pieces else []:
            gate_free(piece)  # the verdict the action log leaves behind
        assert identifiers.scan(pieces) == expected
    finally:
        forget()
