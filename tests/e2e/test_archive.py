"""Nothing compaction removes is gone: the archive of every generation, `recall`, lone surrogates.

The real core, the real budget and compact workers, the scripted model over loopback HTTP with its
usage counted by content and its context enforced.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import orjson

from i_core.call_ids import cite_ids
from i_protocol.jsonsafe import loads_safe
from i_scripted import ScriptedModel

FILLER = "The build log said: " + "step ok; " * 150  # ~1.4 KB per user message
ARCHIVE_TOOL = """
import os, sys
from i_protocol import Worker
worker = Worker("lister", "1.0.0")

@worker.tool("ls")
def ls(arguments, request):
    return "\\n".join(sorted(os.listdir(request.workspace)))  # a Latin-1 name comes back as a lone surrogate

sys.exit(worker.main())
"""


def recalled(tool_output: str) -> dict[int, dict]:
    found = {}
    for line in tool_output.splitlines():
        match = re.match(r"\[span (\d+)\] (.*)", line)
        if match:
            found[int(match.group(1))] = orjson.loads(match.group(2))
    return found


class Agent:
    """The scripted model's side of a session: read a file each turn, recall when asked, note the rest."""

    def __init__(self) -> None:
        self.tool_results: list[str] = []

    def __call__(self, request: dict) -> dict:
        messages = request["messages"]
        last = messages[-1]
        if not request.get("tools"):  # a summary request (model mode only)
            return {"text": "<continuation_summary>\n## Next step\ngo on\n</continuation_summary>"}
        if last["role"] == "tool":
            self.tool_results.append(last["content"])
            return {"text": "noted"}
        text = last["content"] if isinstance(last["content"], str) else ""
        if text.startswith("recall "):
            key, _, value = text.removeprefix("recall ").partition("=")
            return {"tool_calls": [{"name": "recall", "arguments": {key: value}}]}
        if text.startswith("list"):
            return {"tool_calls": [{"name": "ls", "arguments": {}}]}
        return {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}]}


def session_doc(project: Path) -> dict:
    return loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())


def turns(i, project: Path, texts: list[str], *flags: str) -> None:
    for text in texts:
        result = i("-C", str(project), "--session-name", "s", *flags, text)
        assert result.returncode == 0, result.stderr


def compact(i, project: Path) -> None:
    result = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
    assert result.returncode == 0 and "compacted" in result.stdout, result.stdout + result.stderr


def setup(write_config, plugins, dirs, model, **extra) -> None:
    plugins("compact")
    (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
    write_config(model.base_url, budget={"context_window": 100000}, **extra)


def test_after_three_compactions_recall_returns_generation_one_byte_for_byte(i, write_config, plugins, project, dirs):
    agent = Agent()
    with ScriptedModel([agent] * 80, context_window=100000) as model:
        setup(write_config, plugins, dirs, model)
        # Room for generation one whole in one recall (paging has its own tests): the default 2% of
        # the window, in bytes by the learned density, came out at 3.7 KB or at 5 KB+ depending on
        # how long the test's temporary path was (pytest-99 vs pytest-1018).
        write_config(model.base_url, budget={"context_window": 100000, "tool_output_ratio": 0.1})
        turns(i, project, [f"turn {n}: {FILLER}" for n in range(3)])
        before_first = session_doc(project)["messages"]
        compact(i, project)
        for generation in (1, 2):
            turns(i, project, [f"turn {generation}.{n}: {FILLER}" for n in range(3)])
            compact(i, project)
        doc = session_doc(project)
        spans = doc["meta"]["archive"]["spans"]
        assert [entry[0] for entry in spans] == [1, 2, 3]
        _number, first, last, call_ids = spans[0]
        assert first == 1
        # The summary cites every generation's span and its tool call ids.
        summary = next(m for m in doc["messages"] if "_compaction" in m)["content"]
        for _n, a, b, ids in spans:
            assert f"[span {a}-{b}] tool calls: {cite_ids(ids)}" in summary
        turns(i, project, [f"recall span={first}-{last}"])
        generation_one = before_first[1 : last + 1]
        got = recalled(agent.tool_results[-1])
        assert sorted(got) == list(range(first, last + 1))
        assert orjson.dumps([got[n] for n in sorted(got)]) == orjson.dumps(generation_one)  # byte for byte
        # A tool call id recalls the call and its result.
        turns(i, project, [f"recall tool_call_id={call_ids[0]}"])
        by_id = list(recalled(agent.tool_results[-1]).values())
        assert [m["role"] for m in by_id] == ["assistant", "tool"]
        assert by_id[0]["tool_calls"][0]["id"] == call_ids[0] and by_id[1]["tool_call_id"] == call_ids[0]
        assert "A small project used by the end-to-end tests." in by_id[1]["content"]
        # recall asked nobody: it is free like read (no approval on a non-TTY run, none refused).
        assert not any("denied" in r for r in agent.tool_results)
    # .precompact.json is still the last full backup: the history the third compaction replaced.
    backup = loads_safe((project / ".i" / "sessions" / "s.precompact.json").read_bytes())["messages"]
    assert any(str(m.get("content", "")).startswith("turn 2.0:") for m in backup)


class ReusingAgent(Agent):
    """An `Agent` whose every read call is named ``call_0``, as a service numbering each reply from 0."""

    def __call__(self, request: dict) -> dict:
        step = super().__call__(request)
        if step.get("tool_calls") and step["tool_calls"][0]["name"] == "read":
            step["tool_calls"][0]["id"] = "call_0"
        return step


def test_a_call_id_reused_after_its_call_was_archived_is_renamed_and_recall_finds_one(
    i, write_config, plugins, project, dirs
):
    agent = ReusingAgent()
    with ScriptedModel([agent] * 40, context_window=100000) as model:
        setup(write_config, plugins, dirs, model)
        turns(i, project, [f"turn {n}: {FILLER}" for n in range(3)])
        compact(i, project)
        doc = session_doc(project)
        archived = [call_id for entry in doc["meta"]["archive"]["spans"] for call_id in entry[3]]
        assert "call_0" in archived
        live = [c["id"] for m in doc["messages"] for c in m.get("tool_calls") or []]
        assert "call_0" not in live  # only the archive holds it now
        turns(i, project, [f"turn after: {FILLER}"])  # the model names its read call_0 again
        compact(i, project)  # and that call goes to the archive too
        doc = session_doc(project)
        archived = [call_id for entry in doc["meta"]["archive"]["spans"] for call_id in entry[3]]
        live = [c["id"] for m in doc["messages"] for c in m.get("tool_calls") or []]
        every = archived + live
        assert len(every) == 4 and len(set(every)) == 4, every
        turns(i, project, ["recall tool_call_id=call_0"])
        by_id = list(recalled(agent.tool_results[-1]).values())
        assert [m["role"] for m in by_id] == ["assistant", "tool"]  # one call and its result, not two
        messages = [m for g in loads_archive(project) for m in g["messages"]] + doc["messages"]
        calls = [c for m in messages for c in m.get("tool_calls") or []]
        assert calls[-1]["id"] not in ("call_0", *archived[:-1]) and calls[-1]["_original_id"] == "call_0"
        assert [m["tool_call_id"] for m in messages if m.get("role") == "tool"][-1] == calls[-1]["id"]


def loads_archive(project: Path) -> list[dict]:
    data = (project / ".i" / "sessions" / "s.archive.jsonl").read_bytes()
    return [loads_safe(line) for line in data.splitlines()]


def test_the_archive_bound_drops_the_oldest_generation_and_the_summary_says_so(i, write_config, plugins, project, dirs):
    agent = Agent()
    with ScriptedModel([agent] * 80, context_window=100000) as model:
        setup(write_config, plugins, dirs, model, archive_max_bytes=12000)
        for generation in range(3):
            turns(i, project, [f"turn {generation}.{n}: {FILLER}" for n in range(3)])
            compact(i, project)
        doc = session_doc(project)
        archive = doc["meta"]["archive"]
        assert archive["dropped"] and archive["dropped"][0][0] == 1, archive
        gone = archive["dropped"][-1][1]
        summary = next(m for m in doc["messages"] if "_compaction" in m)["content"]
        assert f"No longer archived (removed by the archive's size bound, or damaged): spans 1-{gone}." in summary
        assert (project / ".i" / "sessions" / "s.archive.jsonl").stat().st_size <= 12000
        turns(i, project, ["recall span=1"])
        assert "not in the archive; recallable:" in agent.tool_results[-1]


def test_a_lone_surrogate_in_a_tool_result_compacts_and_resumes_intact(
    i, write_config, plugins, project, dirs, tmp_path
):
    os.mkdir(os.fsencode(project) + b"/caf\xe9")  # a folder named in Latin-1
    script = tmp_path / "lister.py"
    script.write_text(ARCHIVE_TOOL)
    agent = Agent()
    with ScriptedModel([agent] * 80, context_window=100000) as model:
        setup(write_config, plugins, dirs, model)
        tool = {
            "name": "ls",
            "description": "List the workspace.",
            "parameters": {"type": "object", "properties": {}},
            "exec": [sys.executable, str(script)],
        }
        (dirs["config"] / "builtin.json").write_bytes(orjson.dumps({"builtin_profile": "configured", "tools": [tool]}))
        turns(i, project, ["list the workspace", *[f"turn {n}: {FILLER}" for n in range(3)]], "--yolo")
        raw = (project / ".i" / "sessions" / "s.json").read_bytes()
        assert b"caf\\udce9" in raw  # the tool result holds the real byte, kept losslessly
        compact(i, project)
        turns(i, project, [f"turn after: {FILLER}"])  # workers see U+FFFD; nothing fails
        compact(i, project)
        turns(i, project, ["list the workspace again", "recall span=1-4"], "--yolo")
    doc = session_doc(project)
    on_disk = (project / ".i" / "sessions" / "s.json").read_bytes()
    assert b"caf\\udce9" in on_disk  # the latest ls result, after two compactions and a resume
    archived = (project / ".i" / "sessions" / "s.archive.jsonl").read_bytes()
    assert b"caf\\udce9" in archived  # the first ls result, archived exactly
    listing = [m for m in doc["messages"] if m.get("role") == "tool" and m["content"].startswith(".i\n")]
    assert listing and listing[-1]["content"] == ".i\nREADME.md\ncaf\udce9"
    shown = recalled(agent.tool_results[-1])
    assert shown[3]["content"] == ".i\nREADME.md\ncaf\\xe9"  # recall shows the model the byte as \xNN


def test_an_unreadable_archive_is_a_tool_error_and_a_failed_compaction_not_a_crash(
    i, write_config, plugins, project, dirs
):
    agent = Agent()
    with ScriptedModel([agent] * 40, context_window=100000) as model:
        setup(write_config, plugins, dirs, model)
        turns(i, project, [f"turn {n}: {FILLER}" for n in range(3)])
        compact(i, project)
        archive = project / ".i" / "sessions" / "s.archive.jsonl"
        archive.unlink()
        archive.mkdir()  # something that is not a file where the archive goes
        turns(i, project, ["recall span=1-2"])  # the run goes on: the model reads the error
        assert agent.tool_results[-1].startswith("error: recall: cannot read the session's archive: ")
        turns(i, project, [f"turn {n}: {FILLER}" for n in range(3, 5)])
        result = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
        assert result.returncode == 1 and "compaction failed (archive_failed)" in result.stdout
        assert "not a regular file (a folder)" in result.stdout
