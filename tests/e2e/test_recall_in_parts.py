"""A compacted 50 KB tool output reaches the model whole through `recall`, in parts.

The real core, the real budget and compact workers, an external tool worker, and the scripted
model over loopback HTTP with its usage counted by content. The model reads the tool call id from
the summary's citation, calls `recall` with it, and follows each part's `next offset` until the
last part; the parts' texts joined are the original messages, byte for byte.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import orjson

from i_core.call_ids import parse_cited_ids
from i_core.tools.recall import PART_TEXT
from i_protocol.jsonsafe import loads_safe
from i_scripted import ScriptedModel

FILLER = "The build log said: " + "step ok; " * 150  # ~1.4 KB per user message
DUMP_TOOL = """
import sys
from pathlib import Path
from i_protocol import Worker
worker = Worker("dumper", "1.0.0")
ORIGINAL = Path(__file__).with_name("original.json")

@worker.tool("dump")
def dump(arguments, request):
    return ORIGINAL.read_text(encoding="utf-8")

sys.exit(worker.main())
"""


def original_output() -> str:
    """About 50 KB of JSON (UTF-8), with quotes, escapes and characters of one to four bytes."""
    rows = [
        {
            "n": n,
            "path": f"src/module_{n}.py",
            "note": 'caf\u00e9 \u2615 "quoted" \\ \u65e5\u672c \U0001d11e',
            "ok": n % 3 == 0,
        }
        for n in range(520)
    ]
    return orjson.dumps({"rows": rows}, option=orjson.OPT_INDENT_2).decode()


class Agent:
    """The scripted model: dump once, chat, then recall the cited call and follow every next offset."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.recall_arguments: list[dict] = []
        self.cited: list[str] = []
        self._recall_id = ""

    def __call__(self, request: dict) -> dict:
        messages = request["messages"]
        last = messages[-1]
        if last["role"] == "tool":
            if not self.recall_arguments or last["tool_call_id"] != self._recall_id:
                return {"text": "noted"}
            self.parts.append(last["content"])
            match = re.search(r"next offset: (\d+) ", last["content"].partition("\n" + PART_TEXT)[0])
            if match is None:
                return {"text": "read it all"}
            return self._recall(offset=int(match.group(1)))
        text = last["content"] if isinstance(last["content"], str) else ""
        if text == "dump":
            return {"tool_calls": [{"name": "dump", "arguments": {}}]}
        if text == "recall the dump":
            summary = next(
                m["content"] for m in messages if m["role"] == "user" and "Archived originals" in m["content"]
            )
            listed = re.search(r"^\[span [0-9-]+\] tool calls: (.*)$", summary, re.MULTILINE)
            assert listed, summary
            self.cited = parse_cited_ids(listed.group(1))
            return self._recall()
        return {"text": "noted"}

    def _recall(self, **offset: int) -> dict:
        arguments = {"tool_call_id": self.cited[0], **offset}
        self.recall_arguments.append(arguments)
        self._recall_id = f"recall_{len(self.recall_arguments)}"
        return {"tool_calls": [{"id": self._recall_id, "name": "recall", "arguments": arguments}]}


def session_doc(project: Path) -> dict:
    return loads_safe((project / ".i" / "sessions" / "s.json").read_bytes())


def turn(i, project: Path, text: str) -> None:
    result = i("-C", str(project), "--session-name", "s", "--yolo", text)
    assert result.returncode == 0, result.stderr


def test_a_50_kb_compacted_tool_output_is_recalled_whole_in_parts(i, write_config, plugins, project, dirs, tmp_path):
    original = original_output()
    assert len(original.encode("utf-8")) > 50_000
    (tmp_path / "original.json").write_text(original, encoding="utf-8")
    script = tmp_path / "dumper.py"
    script.write_text(DUMP_TOOL)
    agent = Agent()
    with ScriptedModel([agent] * 60, context_window=200_000) as model:
        plugins("compact")
        (dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
        tool = {
            "name": "dump",
            "description": "Dump the build state.",
            "parameters": {"type": "object", "properties": {}},
            "exec": [sys.executable, str(script)],
        }
        (dirs["config"] / "builtin.json").write_bytes(orjson.dumps({"builtin_profile": "configured", "tools": [tool]}))
        # A generous per-call budget while the tool runs, so the history holds its output whole.
        write_config(model.base_url, budget={"context_window": 200_000, "tool_output_ratio": 0.6})
        turn(i, project, "dump")
        [dumped] = [m for m in session_doc(project)["messages"] if m.get("role") == "tool"]
        assert dumped["content"] == original
        for n in range(3):
            turn(i, project, f"turn {n}: {FILLER}")
        compacted = i("--runtime", "compact", "-C", str(project), "--session-name", "s")
        assert compacted.returncode == 0 and "compacted" in compacted.stdout, compacted.stdout + compacted.stderr
        archive = session_doc(project)["meta"]["archive"]
        [[_generation, first, _last, ids]] = archive["spans"]
        assert ids == [dumped["tool_call_id"]]
        # The default per-call budget now: far below the original, so recall must page.
        write_config(model.base_url, budget={"context_window": 200_000, "tool_output_ratio": 0.02})
        turn(i, project, "recall the dump")

    assert agent.cited == ids
    parts = agent.parts
    assert len(parts) >= 2, parts[0][:400]
    assert len(agent.recall_arguments) == len(parts)
    texts = []
    expected_start = 0
    for number, part in enumerate(parts):
        assert "cut by the tool-output budget" not in part  # the core never cut a part
        header, separator, text = part.partition(f"\n{PART_TEXT}\n")
        assert separator, header
        match = re.search(r", a part: characters \[(\d+), (\d+)\) of (\d+);", header)
        assert match, header
        start, end, total = (int(group) for group in match.groups())
        assert start == expected_start and end - start == len(text)
        last = number == len(parts) - 1
        assert ("this is the last part" in header) == last == (end == total)
        if not last:
            assert f"next offset: {end} " in header
            assert agent.recall_arguments[number + 1] == {"tool_call_id": ids[0], "offset": end}
        texts.append(text)
        expected_start = end
    joined = "".join(texts)
    archived = loads_safe((project / ".i" / "sessions" / "s.archive.jsonl").read_bytes().splitlines()[0])
    call_messages = [m for m in archived["messages"] if m.get("tool_call_id") == ids[0] or m.get("tool_calls")]
    numbers = [first + archived["messages"].index(m) for m in call_messages]
    expected = "\n".join(f"[span {n}] {orjson.dumps(m).decode()}" for n, m in zip(numbers, call_messages, strict=True))
    assert joined == expected  # the parts, joined, are the original messages exactly
    recalled_tool = orjson.loads(joined.split("\n")[-1].partition("] ")[2])
    assert recalled_tool["content"] == original
    # A part split the tool result, and said so on both sides.
    assert any("ends inside the message of span" in part for part in parts[:-1])
    assert "begins inside the message of span" in parts[-1]
