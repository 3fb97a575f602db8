"""Protocol-aware reduction of tool results (seed 003)."""

from __future__ import annotations

import json
import re

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from i_compact import reduction
from i_compact.jsonspan import keyed_value_span, value_span
from i_compact.reduction import (
    _ERROR_LINE,
    _ERROR_LINE_LOWER,
    ARRAY_CAP,
    ID_PATTERN,
    RESUME_ARGUMENTS_LIMIT,
    TOOL_RESULT_CAP,
    _error_lines,
    find_ids,
    reduce_tool_result,
)


def staged(arguments: dict, *, bulk: int = 0, omit: list[str] | None = None) -> dict:
    result = {
        "ok": True,
        "data": {
            "status": "pending_approval",
            "mode": "ask",
            "approval": {
                "id": "approval_7f3a9",
                "kind": "command",
                "title": "run migration",
                "destructive": True,
                "resume": {"tool": "workspace_command", "arguments": arguments},
            },
            "markdown": "PLAN BODY " * bulk,
        },
    }
    if omit is not None:
        result["retention"] = {"omit_when_summarizing": omit, "facts": ["migration staged"]}
    return result


def test_resume_call_is_kept_byte_for_byte_with_odd_formatting() -> None:
    # Spacing, key order and escapes as the producer wrote them must survive untouched.
    raw_resume = '{ "tool" : "workspace_edit",\n "arguments": {"transaction_id":"tx_00a1", "action" :"commit", "note":"caf\\u00e9 \\"q\\""} }'
    content = (
        '{"data": {"status": "pending_approval", "mode": "ask", "approval": {"id": "approval_1x9", "kind": "transaction", "resume": '
        + raw_resume
        + '}}, "blob": "'
        + "z" * 9000
        + '"}'
    )
    reduction = reduce_tool_result(content)
    assert raw_resume in reduction.text
    assert reduction.approvals[0].resume == raw_resume
    assert reduction.approvals[0].status == "pending_approval" and reduction.approvals[0].mode == "ask"


def test_big_browser_batch_and_stdin_round_trip_unchanged() -> None:
    actions = [{"action": "click", "selector": f"#button-{i}", "wait": 100 + i} for i in range(30)]
    arguments = {"action": "run", "steps": actions, "stdin": "x" * 2048}
    content = orjson.dumps(staged(arguments, bulk=2000)).decode()
    reduction = reduce_tool_result(content)
    resume = json.loads(reduction.approvals[0].resume or "null")
    assert resume == {"tool": "workspace_command", "arguments": arguments}
    assert reduction.approvals[0].resume in reduction.text


def test_resume_past_12000_characters_is_dropped_whole_with_recovery_marker() -> None:
    arguments = {"action": "run", "stdin": "S" * (RESUME_ARGUMENTS_LIMIT + 10)}
    reduction = reduce_tool_result(orjson.dumps(staged(arguments)).decode())
    approval = reduction.approvals[0]
    assert approval.resume is None
    assert "workspace_inspect" in (approval.resume_dropped or "") and "approval_7f3a9" in approval.resume_dropped
    assert "SSSSSSSSSS" not in reduction.text  # no truncated fragment of the call survives
    assert "workspace_inspect" in reduction.text and "approval_7f3a9" in reduction.text


def test_declared_omissions_are_honoured_on_envelope_and_overflow_paths() -> None:
    content = orjson.dumps(
        staged({"action": "commit", "transaction_id": "tx_9"}, bulk=50, omit=["data.markdown"])
    ).decode()
    small = reduce_tool_result(content)
    assert "PLAN BODY" not in small.text and small.omitted_by_producer == ["data.markdown"]
    assert "migration staged" in small.text  # retention.facts kept
    # Overflow: many protected entries push the envelope past the cap; the omission still wins.
    big = staged({"action": "commit", "transaction_id": "tx_9"}, bulk=50, omit=["data.markdown", "data.secretPlan"])
    big["data"]["secretPlan"] = {"steps": ["STEP-DO-NOT-KEEP"] * 5, "id": "plan_123x"}
    big["data"]["jobs"] = [{"id": f"job_{i:04d}", "status": "running", "title": "t" * 300} for i in range(ARRAY_CAP)]
    big["data"]["more"] = [{"id": f"run_{i:04d}", "status": "done", "path": "p" * 300} for i in range(ARRAY_CAP)]
    reduction = reduce_tool_result(orjson.dumps(big).decode(), cap=3000)
    assert reduction.overflow
    assert "STEP-DO-NOT-KEEP" not in reduction.text and "plan_123x" not in reduction.text
    assert "PLAN BODY" not in reduction.text
    # The staged approval is carried verbatim ahead of the recovery list.
    lines = reduction.text.splitlines()
    approval_line = next(i for i, line in enumerate(lines) if line.startswith("approval approval_7f3a9"))
    first_field = next(i for i, line in enumerate(lines) if " = " in line and not line.startswith("approval"))
    assert approval_line < first_field
    assert '{"tool":"workspace_command","arguments":{"action":"commit","transaction_id":"tx_9"}}' in reduction.text
    listing = "\n".join(lines[approval_line + 1 :])
    assert len(listing) <= 3000 + 200


def test_omission_of_nested_path_through_arrays() -> None:
    content = orjson.dumps(
        {
            "data": {"plan": {"id": "plan_42a", "status": "proposed", "steps": ["SECRET-STEP"] * 3}, "markdown": "MD"},
            "retention": {"omit_when_summarizing": ["data.markdown", "data.plan.steps"]},
        }
    ).decode()
    reduction = reduce_tool_result(content)
    assert "SECRET-STEP" not in reduction.text and '"MD"' not in reduction.text
    assert reduction.ids == {"plan_42a": "proposed"}


def test_truncation_flags_and_counters_survive() -> None:
    content = orjson.dumps(
        {
            "data": {
                "content": "line\n" * 5000,
                "truncated": True,
                "linesOmitted": 4200,
                "bytesOmitted": 99000,
                "path": "src/big.py",
            }
        }
    ).decode()
    reduction = reduce_tool_result(content)
    assert reduction.reduced
    assert '"truncated":true' in reduction.text and '"linesOmitted":4200' in reduction.text
    assert '"bytesOmitted":99000' in reduction.text and "src/big.py" in reduction.text
    assert "PARTIAL" in reduction.text  # the header says the read was partial
    assert "data.truncated=true" in reduction.truncation


def test_changes_listing_of_twenty_survives_whole_with_ids_and_statuses() -> None:
    jobs = [
        {
            "id": f"job_{i:03d}a",
            "kind": "command",
            "status": "running",
            "title": f"job {i}",
            "path": f"logs/{i}",
            "executable": "pytest",
            "exitCode": None,
            "startedAt": "2025-01-01T00:00:00Z",
            "log": "L" * 1000,
        }
        for i in range(ARRAY_CAP)
    ]
    content = orjson.dumps(
        {
            "data": {
                "approvals": [{"id": "approval_55b", "kind": "vcs", "status": "pending", "title": "push", "path": "."}],
                "plans": [],
                "jobs": jobs,
            }
        }
    ).decode()
    reduction = reduce_tool_result(content)
    assert len(content) > TOOL_RESULT_CAP and not reduction.overflow
    for i in range(ARRAY_CAP):
        assert f"job_{i:03d}a" in reduction.text
        assert reduction.ids[f"job_{i:03d}a"] == "running"
    assert (
        "LLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLLL"
        not in reduction.text
    )
    assert "more chars omitted" in reduction.text


def test_long_arrays_get_counters_not_silence() -> None:
    content = orjson.dumps({"items": [{"name": f"n{i}", "blob": "b" * 500} for i in range(100)]}).decode()
    reduction = reduce_tool_result(content)
    assert f"{100 - ARRAY_CAP} more entries omitted" in reduction.text


def test_overflow_keeps_ids_at_the_end_instead_of_slicing() -> None:
    data = {
        "head": {"id": "tx_first1"},
        "middle": {f"entry{i}": {"k": "v" * 390, "id": f"run_{i}x"} for i in range(200)},
        "deep": {"a": {"b": {"c": {"id": "job_last99", "exit_code": 3}}}},
    }
    reduction = reduce_tool_result(orjson.dumps(data).decode(), cap=1500)
    assert reduction.overflow
    assert "exit_code = 3" in reduction.text and "tx_first1" in reduction.text
    assert "more recovery fields omitted by the cap" in reduction.text
    assert "vvvvvvvvvv" not in reduction.text
    assert len(reduction.text) <= 1500 + 300


def test_plain_text_envelope_keeps_ids_errors_and_counts() -> None:
    lines = [f"line {i}" for i in range(3000)]
    lines[1500] = "Error: connection refused while starting job_8812z"
    reduction = reduce_tool_result("\n".join(lines))
    assert reduction.reduced and len(reduction.text) <= TOOL_RESULT_CAP + 200
    assert "job_8812z" in reduction.text and "connection refused" in reduction.text
    assert re.search(r"\[\d+ lines / \d+ chars omitted\]", reduction.text)
    assert "line 0" in reduction.text and "line 2999" in reduction.text


def test_small_results_are_kept_verbatim() -> None:
    assert reduce_tool_result("hello world").text == "hello world"
    assert reduce_tool_result('{"ok": true}').text == '{"ok": true}'


def test_base64_payloads_are_stripped() -> None:
    payload = "data:image/png;base64," + "iVBORw0KGgo" * 200
    text = reduce_tool_result(orjson.dumps({"image": payload, "id": "source_12ab"}).decode()).text
    assert "iVBORw0KGgoiVBORw0KGgo" not in text and "base64 payload" in text


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20),
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
        max_leaves=30,
    )
)
def test_value_span_matches_json_for_any_document(value: object) -> None:
    text = json.dumps({"x": value, "y": [1, {"z": value}]}, indent=1)
    for path, expected in ((["x"], value), (["y", 1, "z"], value), (["y", 0], 1)):
        span = value_span(text, path)
        assert span is not None and json.loads(text[span[0] : span[1]]) == expected
    assert value_span(text, ["missing"]) is None
    assert value_span("{not json", ["x"]) is None


@settings(max_examples=400)
@given(st.text(alphabet=st.sampled_from(list("approvlntxjbusdhec_-0123 .\nAZ")), max_size=80))
def test_find_ids_equals_the_pattern_scan(text: str) -> None:
    # find_ids replaces ID_PATTERN.finditer with str.find gates; the ids and their order must match.
    assert find_ids(text) == [m.group(0) for m in ID_PATTERN.finditer(text)]


def test_a_declared_omission_inside_a_resume_call_never_comes_back() -> None:
    # The resume span used to be taken from the raw payload (jsonspan's fallback walk), so a field
    # the producer declared omitted came back byte for byte inside the "verbatim" call.
    arguments = {"action": "run", "stdin": "DECLARED-OMITTED-BODY"}
    content = orjson.dumps(staged(arguments, omit=["data.approval.resume.arguments.stdin"])).decode()
    for facts_only in (False, True):
        reduction = reduce_tool_result(content, facts_only=facts_only)
        approval = reduction.approvals[0]
        assert approval.resume is None  # a call missing an argument is not a call
        assert "declared part of it omitted" in (approval.resume_dropped or "")
        assert "approval_7f3a9" in approval.line() and "workspace_inspect" in approval.line()
        assert "DECLARED-OMITTED-BODY" not in reduction.text + approval.line()
    # The span scanner returns a span only when its value equals the expected one.
    raw = '{"a": {"resume": {"x": 1, "y": 2}}, "b": {"resume": {"x": 1, "y": 2}}}'
    assert keyed_value_span(raw, "resume", {"x": 1}, ["a"]) is None
    assert keyed_value_span(raw, "resume", {"x": 1, "y": 2}, ["a"]) == (raw.index("{", 1) + 11, raw.index("}") + 1)


ERROR_PIECES = st.sampled_from(
    ["error", "Error", "ERRORS", "exception", "Traceback", "failed", "FAILURE", "fatal", "panic", "exit code 1",
     "Exit Status  3", "exit code 0", "_", "-", " ", "x", "\t", ":", "1", "é", "\u212a", "\u017f"]
)  # fmt: skip


@given(st.lists(ERROR_PIECES, max_size=12).map("".join))
def test_a_line_reports_an_error_in_the_lower_cased_scan_as_in_the_case_folding_one(line: str) -> None:
    # _error_lines matches lower-cased ASCII text without (?i): the same lines as the (?i) rule.
    expected = _ERROR_LINE.search(line) is not None
    assert _error_lines(line) == ([line.strip()[:300]] if expected and line.strip() else [])
    if line.isascii():
        assert (_ERROR_LINE_LOWER.search(line.lower()) is not None) == expected


_RUNS = ["A" * 200, "b" * 150, "0123456789" * 20, "+/", "=", "==", " ", ".", "é", "Zz9" * 70, "\n", "\u3000", "x" * 399]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_RUNS), max_size=12))
def test_payloads_are_the_runs_the_pattern_finds_anywhere(pieces: list[str]) -> None:
    text = "".join(pieces)
    anywhere = re.compile(r"[A-Za-z0-9+/]{400,}={0,2}")  # the rule; the module's form starts at a run
    expected = anywhere.sub(reduction._raw_base64, text)
    assert reduction.strip_payloads(text) == expected
