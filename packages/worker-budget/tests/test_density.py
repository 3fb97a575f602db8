"""Per-class token density: the classes, what an anchor teaches, the store, and estimates vs a count.

The budget package cannot import i_core, so the "real" usage here comes from a small reference
counter written in this file (``reference_tokens``): the scripted model server's documented rule
(a GPT-2-style split: an optional space plus a letter run, 1-3 digits, one non-ASCII character,
an optional space plus one punctuation character, a whitespace run; a letter run of L letters
costs ceil(L / LETTERS)), framed like a chat template (+3 per request, +4 per message, +3 per
tool call, +8 per tool schema). ``LETTERS`` 7 is the scripted server's rule (English prose
~4.5 bytes/token); 4 is a denser tokenizer (~3.5), so the estimator is checked against two
densities it must learn, not one it was tuned for.
"""

from __future__ import annotations

import copy
import itertools
import math
import os
import random
import re
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from core_texts import builtin_tools, default_system_prompt
from hypothesis import given, settings
from hypothesis import strategies as st

import i_budget
from i_budget import Rates, classify, estimate_budget
from i_budget import worker as budget_worker
from i_budget.density import (
    FALLBACK_RATE,
    KEEP_SCALES,
    MARGIN,
    MIN_OBSERVATION_BYTES,
    PRIOR,
    merged,
    observation_scales,
    rates_from_scales,
)
from i_budget.estimate import REQUEST_OVERHEAD_TOKENS
from i_budget.observations import MAX_ENTRIES, MAX_FILE_BYTES, FileStore, MemoryStore, entry_key
from i_protocol import ErrorFrame, WorkerError
from i_protocol.host import WorkerProcess
from i_protocol.summary import SUMMARY_INTRO as SUMMARY_OPEN
from i_protocol.summary import summary_request
from i_protocol.testing import scaled

WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"
ORIGIN = "http://127.0.0.1:8080"
MODEL = "test-model"
KINDS = ("prose", "chinese", "ids", "code")

# -- the reference counter ----------------------------------------------------------------------

_PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}|[^\x00-\x7f]| ?[^\sA-Za-z0-9\x80-\U0010ffff]|\s+")


def reference_tokens(text: str, letters: int = 7) -> int:
    """Tokens of ``text``: one per piece, a letter run of L letters ceil(L / letters)."""
    count = 0
    for match in _PIECE.finditer(text):
        word = match.group().lstrip()
        count += -(-len(word) // letters) if word.isascii() and word.isalpha() else 1
    return count


def message_tokens(message: dict[str, Any], letters: int = 7) -> int:
    total = 4 + reference_tokens(message.get("content") or "", letters)
    for call in message.get("tool_calls") or []:
        function = call["function"]
        total += 3 + reference_tokens(function["name"], letters) + reference_tokens(function["arguments"], letters)
    return total


def request_tokens(history: list[dict[str, Any]], tools: list[dict[str, Any]], letters: int = 7) -> int:
    """What the server counts as input: messages and tool schemas, chat-template framing included."""
    schemas = sum(8 + reference_tokens(orjson.dumps(tool).decode(), letters) for tool in tools)
    return 3 + sum(message_tokens(message, letters) for message in history) + schemas


def test_reference_counter_has_the_documented_shape():
    assert reference_tokens("Hello world.") == 3
    assert reference_tokens("internationalization") == 3
    assert reference_tokens("internationalization", letters=4) == 5
    assert reference_tokens("12345") == 2
    assert reference_tokens("中文!") == 3
    assert reference_tokens('{"id": 7}') == 7


# -- real-looking text of each kind ----------------------------------------------------------------

_VOCABULARY = (
    "the of and to in is that for it as with was on be by this are from or have an they which one you were "
    "all there would their we been has when who will more no if out so said what up its about into than them "
    "can only other new some could time these two may then do first any now such like our over even most made "
    "after also did many before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still own see work long get here between both life "
    "being under never day same another know while request history message summary session budget window "
    "estimate careful however important configuration implementation conversation understanding"
)
WORDS = _VOCABULARY.split()
CHINESE = (
    "上下文预算工作进程在每次请求模型之前估算输入的词元数量。",
    "如果估算超过了触发阈值，核心就会请求压缩工作进程生成摘要。",  # noqa: RUF001
    "摘要必须保留用户最新的请求、已经修改的文件路径以及尚未完成的工作。",
    "服务器返回的真实用量是唯一可靠的依据，本地估算只能偏高，不能偏低。",  # noqa: RUF001
    "中文文本每个汉字通常占三个字节，而分词器往往把一个汉字算作一个词元。",  # noqa: RUF001
    "当会话很长时，旧的工具输出会被截断，只保留对后续步骤有用的部分。",  # noqa: RUF001
    "每个工作进程都是独立安装的程序，通过标准输入和标准输出交换消息。",  # noqa: RUF001
    "测试只使用本地的脚本化模型服务器，不需要付费模型，也不需要访问互联网。",  # noqa: RUF001
    "如果模型服务器拒绝了过长的请求，核心会压缩一次并重新发送，绝不会无限循环。",  # noqa: RUF001
    "配置文件中的预算对象规定了上下文窗口、输出预留和安全比例。",
    "我们的团队每天都会审阅这些改动，并记录发现的问题和下一步的计划。",  # noqa: RUF001
    "天气很好的时候，大家喜欢在公园里散步，讨论下一个版本应该先做什么。",  # noqa: RUF001
)
CODE = "\n".join(path.read_text() for path in sorted(Path(i_budget.__file__).parent.glob("*.py")))


def sample(kind: str, rng: random.Random, size: int) -> str:
    """About ``size`` UTF-8 bytes of ``kind`` text: prose, chinese, ids (a JSON list) or code."""
    if kind == "prose":
        words: list[str] = []
        while sum(map(len, words)) + len(words) < size:
            word = rng.choice(WORDS)
            words.append(word.capitalize() if not words or words[-1].endswith(".") else word)
            if rng.random() < 0.07:
                words[-1] += rng.choice((".", ".", ","))
        return " ".join(words)
    if kind == "chinese":
        text = ""
        while len(text.encode()) < size:
            text += rng.choice(CHINESE)
        return text
    if kind == "ids":
        items: list[Any] = []
        while len(orjson.dumps(items)) < size:
            pick = rng.random()
            if pick < 0.4:
                items.append(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
            elif pick < 0.7:
                items.append(rng.randrange(10**12))
            else:
                items.append(f"{rng.getrandbits(160):040x}")
        return orjson.dumps(items).decode()
    start = rng.randrange(len(CODE) - size)
    return CODE[start : start + size]


TOOLS = builtin_tools()  # what the core sends (read from its source: no copy to drift)
SYSTEM = default_system_prompt("/home/user/project")
SUMMARY_PROMPT = (
    "Summarise the transcript as resumable task state: the user's latest request, constraints, "
    "files changed, ids, pending work. Write plain text."
)


def request(history: list[dict[str, Any]], usage: dict[str, Any] | None = None, **overrides: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "model": MODEL,
        "origin": ORIGIN,
        "budget": {"context_window": 1_000_000},
        "max_tokens": 8_000,
        "history": history,
        "tools": TOOLS,
        "pending_tool_calls": 0,
        "compact": True,
        "usage": usage,
        "cut": None,
    }
    data.update(overrides)
    return copy.deepcopy(data)


Call = Callable[[dict[str, Any]], dict[str, Any]]


@pytest.fixture
def memory(monkeypatch) -> MemoryStore:
    """A fresh in-process store: what one worker process learns without a workspace."""
    store = MemoryStore()
    monkeypatch.setattr(budget_worker, "_memory", store)
    return store


@pytest.fixture
def local(memory) -> Call:
    """``context_budget`` in process, no workspace: returns ``budget_result``."""
    return lambda data: budget_worker.context_budget(data, None)["budget_result"]


class Session:
    """An agent session driven as the core drives it: every request budget-checked, then anchored."""

    def __init__(self, call: Call, kind: str, *, letters: int = 7, seed: int = 1, **overrides: Any) -> None:
        self.call, self.kind, self.letters, self.overrides = call, kind, letters, overrides
        self.rng = random.Random(f"{kind}-{seed}")
        self.history: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        self.usage: dict[str, Any] | None = None
        self.results: list[dict[str, Any]] = []

    def send(self, reply: dict[str, Any]) -> dict[str, Any]:
        """Budget-check the history, then anchor on the server's count of it and ``reply``'s output."""
        result = self.call(request(self.history, self.usage, **self.overrides))
        self.results.append(result)
        real = request_tokens(self.history, self.overrides.get("tools", TOOLS), self.letters)
        self.usage = {
            **result["anchor"],
            "input_tokens": real,
            "output_tokens": message_tokens(reply, self.letters) - 4,
        }
        self.history.append(reply)
        return result

    def turn(self, tool_bytes: int = 3_000) -> None:
        """A user message, a tool call and its result, an answer."""
        index = len(self.history)
        self.history.append({"role": "user", "content": sample(self.kind, self.rng, 500)})
        call = {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": "read", "arguments": orjson.dumps({"path": f"src/file_{index}.txt"}).decode()},
        }
        self.send({"role": "assistant", "content": None, "tool_calls": [call]})
        self.history.append(
            {"role": "tool", "tool_call_id": f"call_{index}", "content": sample(self.kind, self.rng, tool_bytes)}
        )
        self.send({"role": "assistant", "content": sample(self.kind, self.rng, 400)})

    def run(self, turns: int) -> Session:
        for _ in range(turns):
            self.turn()
        return self

    def last_user(self) -> int:
        return max(i for i, m in enumerate(self.history) if m["role"] == "user")

    def candidate(self, summary_bytes: int = 1_500) -> list[dict[str, Any]]:
        """System + the core's untrusted summary message + the recent suffix (from the last user message)."""
        summary = {
            "role": "user",
            "content": f"{SUMMARY_OPEN}\n\n{sample(self.kind, self.rng, summary_bytes)}",
            "_compaction": {"kind": "summary"},
        }
        return [self.history[0], summary, *self.history[self.last_user() :]]

    def summary_request(self) -> list[dict[str, Any]]:
        """The summary request the core sends for the prefix (``i_protocol.summary``, one definition)."""
        return summary_request(SUMMARY_PROMPT, self.history[1 : self.last_user()])

    def ratio(self, history: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> tuple[float, dict]:
        """Unanchored estimate / reference count of ``history`` (the anchor is sent, as the core does)."""
        tools = TOOLS if tools is None else tools
        result = self.call(request(history, self.usage, **{**self.overrides, "tools": tools}))
        return result["estimate"] / request_tokens(history, tools, self.letters), result


# -- classes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (b"Hello world.", (11, 0, 1, 0)),
        (b"user 42 paid 17.50", (11, 6, 1, 0)),  # "17.50": two id runs and a dot
        (b"550e8400-e29b-41d4-a716-446655440000", (0, 32, 4, 0)),
        (b"sha256:9cdb48ea1ff6475f", (0, 22, 1, 0)),  # "sha256" holds a digit: one id run with the hex
        (b"deadbeef cafe", (13, 0, 0, 0)),  # hex without a digit is letters
        (b'{"id": 12345, "name": "x1"}', (9, 7, 11, 0)),
        ("中文，好".encode(), (0, 0, 0, 12)),  # noqa: RUF001
        ("café au lait".encode(), (11, 0, 0, 2)),
        (b"", (0, 0, 0, 0)),
    ],
)
def test_classify_counts_each_class_exactly(text, expected):
    assert classify(text) == expected
    assert sum(classify(text)) == len(text)


@pytest.mark.parametrize("kind", KINDS)
def test_class_sums_equal_the_byte_length_on_real_text(kind):
    raw = sample(kind, random.Random(kind), 20_000).encode()
    word, ids, symbol, other = classify(raw)
    assert word + ids + symbol + other == len(raw)
    dominant = {"prose": word, "chinese": other, "ids": ids, "code": word}[kind]
    assert dominant > 0.45 * len(raw), classify(raw)
    if kind == "ids":
        assert ids > 0.75 * len(raw) and word < 0.02 * len(raw)
    if kind == "chinese":
        assert word == ids == symbol == 0


def test_uuid_and_hex_lists_are_ids_and_punctuation():
    uuids = orjson.dumps([str(uuid.UUID(int=n * 7919 + 1)) for n in range(1, 200)])
    word, ids, symbol, _other = classify(uuids)
    assert word == 0 and ids == 199 * 32 and symbol == len(uuids) - ids


@pytest.mark.parametrize(
    "raw",
    [
        b"a" * (1 << 20) + b" 7",  # a megabyte letter run; a digit elsewhere so the id regex runs
        b"a" * (1 << 20) + b"7",  # one run: all of it is an id
        b"7" * (1 << 20),
        b"7" + b"a" * (1 << 20),
        b"ab-" * (1 << 18) + b"1",
    ],
)
def test_the_id_regex_is_correct_on_megabyte_runs(raw):
    word, ids, symbol, other = classify(raw)
    assert word + ids + symbol + other == len(raw) and other == 0
    if raw.endswith(b" 7"):
        assert (word, ids, symbol) == (len(raw) - 1, 1, 0)
    elif raw.startswith(b"ab-"):
        assert (ids, symbol) == (1, 1 << 18)
    else:
        assert ids == len(raw)


_ALNUM_RUN = re.compile(rb"[A-Za-z0-9]+")


def classes_by_definition(raw: bytes) -> tuple[int, int, int, int]:
    """The documented classes, byte by byte: an alphanumeric run holding a digit is an id."""
    in_id = bytearray(len(raw))
    for run in _ALNUM_RUN.finditer(raw):
        if any(48 <= byte <= 57 for byte in run.group()):
            in_id[run.start() : run.end()] = b"\x01" * (run.end() - run.start())
    word = sum(
        1
        for byte, flag in zip(raw, in_id, strict=True)
        if not flag and (byte == 32 or 65 <= byte <= 90 or 97 <= byte <= 122)
    )
    ids = sum(in_id)
    other = sum(1 for byte in raw if byte >= 128)
    return (word, ids, len(raw) - word - ids - other, other)


@settings(max_examples=400, deadline=None)
@given(
    raw=st.one_of(st.binary(max_size=200), st.text(alphabet='ab1Z9 -_."é中\n', max_size=200).map(lambda t: t.encode()))
)
def test_classify_matches_the_definition(raw):
    assert classify(raw) == classes_by_definition(raw)


# -- what one observation teaches ---------------------------------------------------------------------


def test_an_observation_splits_by_the_prior_and_only_significant_classes_learn():
    # 2000 word bytes carry 440 prior tokens, 400 symbol bytes 200: both over 10%; 100 id bytes (45, 6.6%) not.
    classes = (2_000, 100, 400, 0)
    prior_tokens = 2_000 * PRIOR[0] + 100 * PRIOR[1] + 400 * PRIOR[2]
    scales = observation_scales(classes, 1_000)
    assert scales[0] == scales[2] == pytest.approx(1_000 / prior_tokens)
    assert scales[1] is None and scales[3] is None
    rates = rates_from_scales(merged([[], [], [], []], scales))
    assert rates.per_byte[0] == pytest.approx(1_000 / prior_tokens * PRIOR[0] * MARGIN, rel=1e-4)
    assert rates.per_byte[2] == pytest.approx(1_000 / prior_tokens * PRIOR[2] * MARGIN, rel=1e-4)
    assert rates.per_byte[1] == rates.per_byte[3] == FALLBACK_RATE == 1.0
    assert rates.observations == (1, 0, 1, 0)
    # The learned classes reproduce the observation with the margin; unlearned ones cost a token a byte.
    assert rates.tokens(classes) == pytest.approx(1_000 * MARGIN * (1 - 45 / prior_tokens) + 100, abs=1)


@pytest.mark.parametrize(
    ("classes", "tokens"),
    [
        ((MIN_OBSERVATION_BYTES - 1, 0, 0, 0), 100),  # too small: framing dominates
        ((5_000, 0, 0, 0), 50),  # 0.01 tokens a byte: corrupt usage
        ((5_000, 0, 0, 0), 20_000),  # 4 tokens a byte: corrupt usage
        ((5_000, 0, 0, 0), 0),
    ],
)
def test_small_or_implausible_observations_teach_nothing(classes, tokens):
    assert observation_scales(classes, tokens) == [None, None, None, None]


def test_a_class_follows_the_densest_of_its_recent_scales():
    scales: list[list[float]] = [[], [], [], []]
    for value in (1.0, 1.4, 0.9, *([1.1] * KEEP_SCALES)):
        scales = merged(scales, [value, None, None, None])
    assert len(scales[0]) == KEEP_SCALES
    assert rates_from_scales(scales).per_byte[0] == pytest.approx(1.1 * PRIOR[0] * MARGIN)  # 1.4 aged out
    assert rates_from_scales([[1.4, 1.0], [], [], []]).per_byte[0] == pytest.approx(1.4 * PRIOR[0] * MARGIN)


# -- the simulated session: estimates vs the reference count --------------------------------------------


@pytest.mark.parametrize("letters", [7, 4])
@pytest.mark.parametrize("kind", KINDS)
def test_unanchored_estimates_track_real_density_after_a_few_turns(local, kind, letters):
    session = Session(local, kind, letters=letters).run(3)
    assert session.results[0]["estimate_method"] == "utf8_bytes"
    assert all(r["estimate_method"] == "usage_anchor" for r in session.results[1:])
    candidate, result = session.ratio(session.candidate())
    assert result["estimate_method"] == "density" and result["fallback_reason"] == "prefix_changed"
    summary, summary_result = session.ratio(session.summary_request(), tools=[])
    assert summary_result["estimate_method"] == "density"
    assert 0.9 <= candidate <= 1.5, (kind, letters, candidate)
    # The core's real tool schemas (8 tools, 4.7 KB, read from its source) are English in every
    # session's anchor: a Chinese summary request at 4 letters per token estimates at 1.52x after
    # three turns (1.50x with the 5-tool, 2.7 KB copy this test used to keep). Over is the safe side.
    assert 0.9 <= summary <= 1.55, (kind, letters, summary)
    # Before this change both were at 1 token per byte: 2-4.5x the real count (ids at 4 letters per
    # token is the closest, 1.97x, since the core's tool descriptions were trimmed for small windows).
    plain, _ = Session(
        local, kind, letters=letters, budget={"context_window": 1_000_000, "tokenizer": "utf8_bytes"}
    ).ratio(session.candidate())
    assert plain > 1.9


@pytest.mark.parametrize("kind", KINDS)
def test_anchored_estimates_never_undercount(local, kind):
    session = Session(local, kind).run(4)
    replies = [i for i, m in enumerate(session.history) if m["role"] == "assistant"]
    for number, (result, end) in enumerate(zip(session.results, replies, strict=True)):
        real = request_tokens(session.history[:end], TOOLS)
        assert result["estimate"] >= real, (kind, end)
        # From the third request on, the tool results' class has been learned from an increment
        # (before, a class the first request barely held, e.g. Chinese under 2.7 KB of schemas, is at bytes).
        if number >= 2:
            assert result["estimate_method"] == "usage_anchor"
            assert result["estimate"] <= 1.2 * real, (kind, end)


def test_the_anchor_carries_class_bytes_and_the_increment_base(local):
    session = Session(local, "prose").run(1)
    first, second = session.results
    history = session.history
    assert "base" not in first["anchor"]  # nothing anchored before the first request
    # classes: every byte of the request (messages + tool schemas as wrapped on the wire), by class.
    request_bytes = len(orjson.dumps(history[:2], option=orjson.OPT_SORT_KEYS)) - 2
    tool_bytes = len(orjson.dumps(TOOLS)) + 30 * len(TOOLS) - 2
    assert sum(first["anchor"]["classes"]) == pytest.approx(request_bytes + tool_bytes, abs=4)
    assert second["anchor"]["base"] == {
        "input_tokens": request_tokens(history[:2], TOOLS),
        "classes": first["anchor"]["classes"],
    }
    grown = [a - b for a, b in zip(second["anchor"]["classes"], first["anchor"]["classes"], strict=True)]
    assert sum(grown) == pytest.approx(len(orjson.dumps(history[2:4], option=orjson.OPT_SORT_KEYS)) - 1, abs=2)
    assert second["density"]["observed"] == ["request: recorded (in memory: no workspace)"]


def test_learned_density_is_described(local):
    session = Session(local, "prose").run(3)
    density = session.results[-1]["density"]
    assert density["rule"] == "per_class" and density["margin"] == MARGIN
    word = density["classes"]["word"]
    assert word["fallback"] is False and word["observations"] >= 3
    assert 0.2 < word["tokens_per_byte"] < 0.3  # ~4.5 bytes a token of prose, with the margin
    assert density["classes"]["other"] == {"tokens_per_byte": 1.0, "observations": 0, "fallback": True}
    assert "other" in density["fallback_classes"] and "word" not in density["fallback_classes"]
    assert density["observed"] == ["increment: recorded (in memory: no workspace)"]
    assert density["detail"] is None


def test_the_same_anchor_presented_to_several_checks_is_learned_once(local, memory):
    session = Session(local, "prose").run(2)
    again = local(request(session.history, session.usage))
    assert again["density"]["observed"] == ["increment: recorded (in memory: no workspace)"]
    repeat = local(request(session.history, session.usage))
    assert repeat["density"]["observed"] == ["increment: known"]
    assert len(memory.load(entry_key(ORIGIN, MODEL)).scales[0]) == again["density"]["classes"]["word"]["observations"]
    assert repeat["density"] == {**again["density"], "observed": ["increment: known"]}


# -- what is never learned ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("patch", "reason"),
    [
        ({"input_tokens": None}, "usage_partial"),
        ({"output_tokens": None}, "usage_partial"),
        ({"model": None}, "usage_partial"),
        ({"input_tokens": -3}, "usage_invalid"),
        ({"input_tokens": 12.5}, "usage_invalid"),
        ({"input_tokens": 0}, "usage_invalid"),
        ({"input_tokens": 2_000_000_000}, "usage_overflow"),
    ],
)
def test_bad_usage_teaches_nothing(local, memory, patch, reason):
    history = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": sample("prose", random.Random(3), 4_000)},
    ]
    first = local(request(history))
    usage = {
        k: v
        for k, v in {**first["anchor"], "input_tokens": 1_000, "output_tokens": 10, **patch}.items()
        if v is not None
    }
    result = local(request([*history, {"role": "assistant", "content": "ok"}], usage))
    assert result["fallback_reason"] == reason
    assert result["density"]["observed"] == []
    assert result["estimate_method"] == "utf8_bytes"
    assert memory.load(entry_key(ORIGIN, MODEL)).scales == [[], [], [], []]


def test_tiny_increments_and_implausible_counts_teach_nothing(local, memory):
    history = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hi"}]
    first = local(request(history, tools=[]))
    small = local(
        request(
            [*history, {"role": "assistant", "content": "hello"}],
            {**first["anchor"], "input_tokens": 40, "output_tokens": 2},
            tools=[],
        )
    )
    assert small["density"]["observed"] == ["request: not learned (too small or implausible)"]
    big = [*history, {"role": "user", "content": sample("prose", random.Random(2), 6_000)}]
    whole = local(request(big, tools=[]))
    absurd = local(request(big, {**whole["anchor"], "input_tokens": 40, "output_tokens": 1}, tools=[]))
    assert absurd["density"]["observed"] == ["request: not learned (too small or implausible)"]
    assert absurd["estimate_method"] == "usage_anchor"
    assert memory.load(entry_key(ORIGIN, MODEL)).scales == [[], [], [], []]
    # A plausible count of the big request is learned; the next few bytes on top of it are not.
    tokens = request_tokens(big, [])
    grown = [*big, {"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks, and now?"}]
    learned = local(request(grown, {**whole["anchor"], "input_tokens": tokens, "output_tokens": 2}, tools=[]))
    assert learned["density"]["observed"] == ["request: recorded (in memory: no workspace)"]
    after = local(
        request(
            [*grown, {"role": "assistant", "content": "ok"}],
            {**learned["anchor"], "input_tokens": tokens + 12, "output_tokens": 1},
            tools=[],
        )
    )
    assert after["density"]["observed"] == ["increment: not learned (too small or implausible)"]
    assert after["density"]["classes"] == learned["density"]["classes"]
    assert memory.load(entry_key(ORIGIN, MODEL)).scales[0] == [
        pytest.approx(
            tokens / sum(c * p for c, p in zip(learned["anchor"]["base"]["classes"], PRIOR, strict=True)), rel=1e-4
        )
    ]


@pytest.mark.parametrize(
    "damage",
    [
        {"classes": "many"},
        {"classes": [1, 2, 3]},
        {"base": {"input_tokens": -4}},
        {"base": {"input_tokens": 10, "classes": [10**9, 0, 0, 0]}},
    ],
)
def test_a_damaged_increment_falls_back_to_learning_the_whole_request(local, damage):
    session = Session(local, "prose").run(1)
    usage = {**session.usage, **damage}
    result = local(request(session.history, usage))
    assert result["estimate_method"] == "usage_anchor"
    assert result["density"]["observed"] == ["request: recorded (in memory: no workspace)"]
    word = result["density"]["classes"]["word"]["tokens_per_byte"]
    assert 0.2 < word < 0.35  # the whole request at its real count, not a garbage increment


def test_two_origins_or_two_models_never_share_rates(local):
    session = Session(local, "chinese").run(3)
    for other in ({"origin": "http://127.0.0.1:9090"}, {"model": "other-model"}):
        result = local(request(session.candidate(), **other))
        assert result["estimate_method"] == "utf8_bytes"
        assert result["density"]["fallback_classes"] == list(i_budget.CLASSES)
    same = local(request(session.candidate()))
    assert same["estimate_method"] == "density" and same["density"]["classes"]["other"]["fallback"] is False
    other_session = Session(local, "prose", model="other-model").run(3)
    assert other_session.results[-1]["density"]["classes"]["other"]["fallback"] is True
    assert local(request(session.candidate()))["density"]["classes"] == same["density"]["classes"]


def test_an_unmatched_anchor_never_hides_the_messages_it_covered(local):
    # The history is measured split at the anchor's prefix; when the anchor does not match (an edited
    # message, another model), every message must be estimated, not only those after the split.
    session = Session(local, "prose").run(3)
    edited = copy.deepcopy(session.history)
    edited[1]["content"] = "Rewritten: " + edited[1]["content"]
    ratio, result = session.ratio(edited)
    assert result["fallback_reason"] == "prefix_changed" and result["estimate_method"] == "density"
    assert 0.9 <= ratio <= 1.5, ratio
    Session(local, "prose", model="other-model").run(3)
    switched = local(request(session.history, session.usage, model="other-model"))
    assert switched["fallback_reason"] == "model_changed" and switched["estimate_method"] == "density"
    assert switched["estimate"] >= 0.9 * request_tokens(session.history, TOOLS)


def test_origin_must_be_a_string(local):
    with pytest.raises(WorkerError, match="origin must be a string"):
        local(request([{"role": "system", "content": "s"}], origin=42))


def test_provisional_marks_an_estimate_resting_on_classes_never_observed(local):
    prose = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": sample("prose", random.Random(4), 3_000)},
    ]
    assert local(request(prose))["provisional"] is True  # nothing observed: 1 token per byte
    session = Session(local, "prose").run(3)
    learned = local(request(session.candidate()))
    assert learned["estimate_method"] == "density" and learned["provisional"] is False
    chinese = [*prose[:1], {"role": "user", "content": sample("chinese", random.Random(4), 3_000)}]
    unseen = local(request(chinese))  # Chinese on a model that has only seen English: its class is at bytes
    assert unseen["density"]["classes"]["other"]["fallback"] is True and unseen["provisional"] is True
    assert local(request(chinese, rejection={"input_tokens": 5_000}))["provisional"] is False
    bytes_budget = {"context_window": 1_000_000, "tokenizer": "utf8_bytes"}
    assert local(request(chinese, budget=bytes_budget))["provisional"] is False


# -- rejections ---------------------------------------------------------------------------------


def test_a_rejection_raises_the_estimate_to_the_servers_count_and_recommends_compaction(local):
    session = Session(local, "prose").run(2)
    history = [*session.history, {"role": "user", "content": sample("prose", random.Random(9), 3_000)}]
    plain = local(request(history, session.usage))
    counted = plain["estimate"] + 2_000  # the server counted far more than the anchor + density predicted
    rejected = local(request(history, session.usage, rejection={"input_tokens": counted, "limit": 1_000_000}))
    # At least the server's count; the rejection is learned first, so the estimate may be a little above it.
    assert counted <= rejected["estimate"] <= 1.1 * counted
    assert rejected["recommend_compact"] is True and plain["recommend_compact"] is False
    assert rejected["density"]["observed"] == ["increment: known", "rejection: recorded (in memory: no workspace)"]
    word = rejected["density"]["classes"]["word"]["tokens_per_byte"]
    assert word > 1.5 * plain["density"]["classes"]["word"]["tokens_per_byte"]
    assert not any("context limit" in note for note in rejected["notes"])  # limit == context_window
    # Only the limit: the server counted at least limit + 1, which is learned as a lower bound.
    fresh = Session(local, "prose", origin="http://127.0.0.1:7070").run(2)
    grown = [*fresh.history, {"role": "user", "content": sample("prose", random.Random(9), 3_000)}]
    before = local(request(grown, fresh.usage, origin="http://127.0.0.1:7070"))
    limit = before["estimate"] + 1_500
    over = local(request(grown, fresh.usage, origin="http://127.0.0.1:7070", rejection={"limit": limit}))
    assert over["recommend_compact"] is True and over["estimate"] > limit


def test_a_rejection_without_counts_still_recommends_compaction(local):
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "x"}]
    result = local(request(history, rejection={}))
    assert result["recommend_compact"] is True
    assert result["estimate"] == local(request(history))["estimate"]


def test_a_server_limit_below_the_window_adds_a_note(local):
    history = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "x" * 100}]
    result = local(request(history, rejection={"limit": 32_768}))
    assert any("32768" in note and "budget.context_window" in note for note in result["notes"])
    assert result["recommend_compact"] is True


@pytest.mark.parametrize("rejection", [[1], {"input_tokens": 0}, {"limit": "big"}, {"input_tokens": True}])
def test_a_malformed_rejection_is_an_error(local, rejection):
    with pytest.raises(WorkerError, match="rejection"):
        local(request([{"role": "system", "content": "s"}], rejection=rejection))


# -- the budget fields ----------------------------------------------------------------------------


def test_unknown_budget_fields_and_calibrate_are_clear_errors(local):
    history = [{"role": "system", "content": "s"}]
    with pytest.raises(WorkerError, match=r"budget: unknown field\(s\) contex_window; known fields: context_window, "):
        local(request(history, budget={"context_window": 1_000, "contex_window": 2}))
    with pytest.raises(WorkerError, match=r"budget\.calibrate was removed in i-worker-budget 0\.2") as info:
        local(request(history, budget={"context_window": 1_000, "calibrate": True}))
    assert "utf8_bytes" in str(info.value)
    images = local(request(history, budget={"context_window": 100_000, "images": "omit"}))
    assert images["fits"] is True  # the compact worker's field passes


def test_utf8_bytes_keeps_exact_bytes_and_learns_nothing(local, memory):
    bytes_budget = {"context_window": 1_000_000, "tokenizer": "utf8_bytes"}
    session = Session(local, "prose", budget=bytes_budget).run(3)
    assert all(
        r["density"] == {"rule": "utf8_bytes", "detail": "budget.tokenizer is 'utf8_bytes'"} for r in session.results
    )
    assert memory.load(entry_key(ORIGIN, MODEL)).scales == [[], [], [], []]
    candidate = session.candidate()
    result = local(request(candidate, budget=bytes_budget))
    tools = len(orjson.dumps(TOOLS)) + 30 * len(TOOLS)
    assert result["estimate"] == result["comparable_estimate"] + tools + REQUEST_OVERHEAD_TOKENS
    assert result["bytes_per_token"] == 1.0 and result["estimate_method"] == "utf8_bytes"
    # Learned rates exist for this (origin, model) now; utf8_bytes still ignores them.
    Session(local, "prose").run(3)
    assert local(request(candidate, budget=bytes_budget))["estimate"] == result["estimate"]


# -- tool output budgets and cut estimates -------------------------------------------------------------


def test_tool_output_bytes_follow_the_learned_density(local):
    window = {"context_window": 128_000}
    fresh = local(request([{"role": "system", "content": SYSTEM}], budget=window, pending_tool_calls=1))
    budget = fresh["tool_output_budget"]
    assert budget["per_call_tokens"] == 2_560 and budget["per_call_bytes"] == 2_560
    assert budget["bytes_per_token"] == 1.0
    session = Session(local, "prose", budget=window).run(4)
    result = local(request(session.history, session.usage, budget=window, pending_tool_calls=1))
    learned = result["tool_output_budget"]
    assert learned["per_call_tokens"] == 2_560
    assert learned["bytes_per_token"] == result["bytes_per_token"]
    assert learned["per_call_bytes"] == int(2_560 * learned["bytes_per_token"])
    # A prose request is ~4.4 real bytes a token here, but the first whole request (2.7 KB of tool
    # schemas: dense JSON) sets the word rate while it is among the kept scales: ~3.2 bytes a token.
    assert learned["per_call_bytes"] >= 3 * 2_560
    assert learned["per_call_chars"] == learned["per_call_bytes"] // 4
    # Once it aged out (KEEP_SCALES observations later), prose is ~4.3 bytes a token with the
    # margin: a 10 KB file read arrives whole.
    session.run(KEEP_SCALES)
    later = local(request(session.history, session.usage, budget=window, pending_tool_calls=1))
    assert later["density"]["classes"]["word"]["observations"] == KEEP_SCALES
    assert later["tool_output_budget"]["per_call_bytes"] >= 10_240


def test_cut_estimates_only_when_recommended_or_forced(local):
    session = Session(local, "prose").run(3)
    quiet = local(request(session.history, session.usage))
    assert quiet["recommend_compact"] is False and "cut_estimates" not in quiet
    forced = local(request(session.history, session.usage, force=True))
    assert forced["recommend_compact"] is False and "cut_estimates" in forced
    not_compacting = local(request(session.history, session.usage, force=True, compact=False))
    assert "cut_estimates" not in not_compacting
    small = {"context_window": 1_000_000, "threshold": 1_000}
    recommended = local(request(session.history, session.usage, budget=small))
    assert recommended["recommend_compact"] is True and "cut_estimates" in recommended


def test_cut_estimates_are_consistent_with_the_candidate_estimate(local):
    session = Session(local, "prose").run(4)
    result = local(request(session.history, session.usage, force=True))
    cuts = result["cut_estimates"]
    history = session.history
    indexes = [cut for cut, _tokens in cuts["suffix"]]
    assert indexes == sorted(indexes) and all(history[i]["role"] in ("user", "assistant") for i in indexes)
    assert indexes == [i for i in range(2, len(history)) if history[i]["role"] in ("user", "assistant")]
    tokens = [tokens for _cut, tokens in cuts["suffix"]]
    assert all(a > b for a, b in itertools.pairwise(tokens))
    assert 0.2 < cuts["tokens_per_byte"] < 0.4
    assert cuts["tokens_per_byte"] == pytest.approx(1 / result["bytes_per_token"], rel=0.01)
    # The compactor's figure for a candidate at each cut vs the budget's estimate of that candidate.
    rng = random.Random(5)
    for cut, suffix in cuts["suffix"]:
        summary = sample("prose", rng, 1_200)
        candidate = [history[0], {"role": "user", "content": f"{SUMMARY_OPEN}\n\n{summary}"}, *history[cut:]]
        planned = cuts["fixed_tokens"] + math.ceil(len(summary.encode()) * cuts["tokens_per_byte"]) + suffix
        actual = local(request(candidate, session.usage))
        assert actual["estimate_method"] == "density"
        assert 0.97 * actual["estimate"] <= planned <= 1.15 * actual["estimate"], (cut, planned, actual["estimate"])
        assert actual["estimate"] >= 0.9 * request_tokens(candidate, TOOLS)


def test_without_learning_cut_estimates_are_bytes(local):
    history = [
        {"role": "system", "content": SYSTEM},
        *[{"role": r, "content": "word " * 200} for r in ("user", "assistant") * 3],
    ]
    result = local(request(history, force=True))
    cuts = result["cut_estimates"]
    assert cuts["tokens_per_byte"] == 1.0
    sizes = [len(orjson.dumps(m, option=orjson.OPT_SORT_KEYS)) + 1 for m in history]
    assert cuts["suffix"][0] == [2, sum(sizes[2:])] and cuts["suffix"][-1] == [6, sizes[6]]


# -- the density file -------------------------------------------------------------------------------


def test_a_corrupt_density_file_is_reported_and_replaced(tmp_path):
    path = tmp_path / "budget" / "density.json"
    path.parent.mkdir()
    for damage, said in (
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "unknown shape"),
        (b" " * (MAX_FILE_BYTES + 1), f"over {MAX_FILE_BYTES} bytes"),
    ):
        path.write_bytes(damage)
        store = FileStore(path)
        assert said in (store.load("k").detail or "")
        assert store.record("k", "obs", [1.0, None, None, None]) == "recorded"
        doc = orjson.loads(path.read_bytes())
        assert list(doc["entries"]) == ["k"] and doc["entries"]["k"]["scales"]["word"] == [1.0]
        assert store.load("k").detail is None


def test_the_store_keeps_at_most_256_entries_dropping_the_oldest(tmp_path):
    store = FileStore(tmp_path / "density.json")
    for n in range(MAX_ENTRIES + 3):
        assert store.record(f"origin model-{n}", "obs", [1.0, None, None, None]) == "recorded"
    entries = orjson.loads((tmp_path / "density.json").read_bytes())["entries"]
    assert len(entries) == MAX_ENTRIES
    assert "origin model-0" not in entries and "origin model-2" not in entries
    assert "origin model-3" in entries and f"origin model-{MAX_ENTRIES + 2}" in entries
    memory = MemoryStore()
    for n in range(MAX_ENTRIES + 3):
        memory.record(f"m{n}", "obs", [1.0, None, None, None])
    assert memory.load("m0").scales == [[], [], [], []] and memory.load(f"m{MAX_ENTRIES + 2}").scales[0] == [1.0]


def test_the_density_file_is_never_written_over_its_size_limit(tmp_path):
    store = FileStore(tmp_path / "density.json")
    long_model = "m" * 4_100  # 256 entries of this are over 1 MiB, which the reader refuses
    for n in range(MAX_ENTRIES):
        store.record(f"{ORIGIN} {long_model}{n}", "obs", [1.0, None, None, None])
        assert (tmp_path / "density.json").stat().st_size <= MAX_FILE_BYTES
    entries = orjson.loads((tmp_path / "density.json").read_bytes())["entries"]
    assert 200 < len(entries) < MAX_ENTRIES  # the oldest were dropped, not everything
    assert f"{ORIGIN} {long_model}0" not in entries
    latest = store.load(f"{ORIGIN} {long_model}{MAX_ENTRIES - 1}")
    assert latest.detail is None and latest.scales[0] == [1.0]


def test_an_unwritable_store_is_reported_not_fatal(tmp_path):
    blocker = tmp_path / "budget"
    blocker.write_text("a file where the folder should be")
    status = FileStore(blocker / "density.json").record("k", "obs", [1.0, None, None, None])
    assert status.startswith("skipped: the density file is not writable")


# -- a real worker process with a workspace --------------------------------------------------------------


def spawn(exe: str, dirs: dict[str, str], cwd: Path) -> WorkerProcess:
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    return WorkerProcess.spawn([exe], env=env, cwd=str(cwd))


def process_call(worker: WorkerProcess, dirs: dict[str, str]) -> Call:
    def call(data: dict[str, Any]) -> dict[str, Any]:
        context = {"paths": dirs, "workspace_id": WORKSPACE_ID}
        return worker.call("context_budget", data, context=context, timeout=scaled(30))["budget_result"]

    return call


@pytest.mark.parametrize("kind", ["prose", "ids"])
def test_a_worker_process_learns_in_the_workspace_and_a_new_process_reuses_it(exe, dirs, tmp_path, kind):
    first = spawn(exe, dirs, tmp_path)
    try:
        session = Session(process_call(first, dirs), kind).run(3)
        ratio, before = session.ratio(session.candidate())
        summary, _ = session.ratio(session.summary_request(), tools=[])
    finally:
        first.close()
    assert before["density"]["detail"] is None
    assert 0.9 <= ratio <= 1.5 and 0.9 <= summary <= 1.5, (ratio, summary)
    path = Path(dirs["data_dir"]) / "workspaces" / WORKSPACE_ID / "budget" / "density.json"
    stored = orjson.loads(path.read_bytes())["entries"][f"{ORIGIN} {MODEL}"]
    learned = "word" if kind == "prose" else "id"
    assert len(stored["scales"][learned]) >= 3
    second = spawn(exe, dirs, tmp_path)
    try:
        call = process_call(second, dirs)
        candidate = copy.deepcopy(session.history[:1] + session.history[session.last_user() :])
        again = call(request(candidate))
        same = Session(call, kind)
        same.history, same.usage = session.history, session.usage
        ratio_again, after = same.ratio(candidate)
    finally:
        second.close()
    assert again["estimate_method"] == "density" and again["density"]["classes"] == before["density"]["classes"]
    assert ratio_again >= 0.9 and after["estimate"] == again["estimate"]


def test_a_worker_process_without_a_workspace_learns_in_memory(exe, dirs, tmp_path):
    worker = spawn(exe, dirs, tmp_path)
    try:

        def call(data: dict[str, Any]) -> dict[str, Any]:
            return worker.call("context_budget", data, context={"paths": dirs}, timeout=scaled(30))["budget_result"]

        session = Session(call, "prose").run(2)
        _ratio, result = session.ratio(session.candidate())
    finally:
        worker.close()
    assert result["estimate_method"] == "density"
    assert "no workspace state" in result["density"]["detail"]
    assert session.results[-1]["density"]["observed"] == ["increment: recorded (in memory: no workspace)"]
    assert not (Path(dirs["data_dir"]) / "workspaces").exists()


def test_calibrate_is_an_error_frame_naming_the_change(exe, dirs, tmp_path):
    worker = spawn(exe, dirs, tmp_path)
    try:
        with pytest.raises(ErrorFrame, match=r"budget\.calibrate was removed"):
            process_call(worker, dirs)(
                request([{"role": "system", "content": "s"}], budget={"context_window": 1_000, "calibrate": True})
            )
    finally:
        worker.close()


# -- properties ---------------------------------------------------------------------------------------

rate = st.floats(0.02, 2.0, allow_nan=False)
body_text = st.text(max_size=300)


@settings(max_examples=150, deadline=None)
@given(
    rates=st.tuples(rate, rate, rate, rate),
    body=st.lists(st.tuples(st.sampled_from(["user", "assistant", "tool"]), body_text), max_size=10),
    system=body_text,
)
def test_learned_estimate_is_at_least_bytes_times_the_smallest_rate(rates, body, system):
    history = [{"role": "system", "content": system}, *({"role": role, "content": text} for role, text in body)]
    learned = Rates(rates, (1, 1, 1, 1), True)
    data = {"model": "m", "budget": {"context_window": 100_000_000}, "max_tokens": 10, "history": history, "tools": []}
    result = estimate_budget(data, rates=learned).result
    assert result["estimate_method"] == "density"
    assert result["estimate"] >= min(rates) * result["comparable_estimate"]
    assert result["estimate"] <= max(rates) * result["comparable_estimate"] + REQUEST_OVERHEAD_TOKENS + 1
