"""A coding-like long task for end-to-end tests and bench/long_session.py.

Real text, not filler: English notes are sentences of this repository's own READMEs, Chinese
notes are sentences of Chinese prose, id-dense notes are JSON records of UUIDs, hashes and
paths. Every note plants one marker id (``ID-<kind>-<turn>-<hex>``) and names one file, so a
test can tell whether compaction kept them. The scripted model reads files when asked, answers
briefly, and writes summaries the way a diligent model would: every id and path it saw,
including those of the summary so far.
"""

from __future__ import annotations

import hashlib
import random
import re
import uuid
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
CHINESE = (
    "预算工作器在每次模型请求之前估算上下文的大小。它使用上一轮真实的用量作为锚点，只对新增的内容进行估计。"
    "压缩工作器选择一个切点，把较早的历史总结成一段可以继续任务的状态记录。总结必须保留文件路径、任务编号和尚未完成的步骤。"
    "当服务器因为上下文过长而拒绝请求时，核心会记录拒绝中的数字，重新压缩，然后再发送一次新的请求。"
    "会话保存在磁盘上，每次保存都是原子的，失败的一轮不会破坏上一个完整的检查点。"
    "工具的输出是不可信的数据，其中的任何指令都不会被执行，模型的文字也同样只是数据。"
    "长时间运行的任务必须在上下文窗口被填满之后继续工作，而不会丢失正在进行的线索。"
    "用户可以随时压缩会话，也可以从上一次的会话继续，检查点永远保留最后一个好的状态。"
    "中文文本的每个字符占用三个字节，真实的分词器通常把一个汉字算作一个或更多的标记。"
)
_ID = re.compile(r"ID-[a-z]+-\d+-[0-9a-f]{8}")
_PATH = re.compile(r"src/[a-z_]+/[a-z_]+\.py")


def english_sentences() -> list[str]:
    """Sentences of this repository's READMEs (real technical English)."""
    text = " ".join(path.read_text(encoding="utf-8") for path in sorted(ROOT.glob("packages/*/README.md")))
    text = re.sub(r"[`|#*]+", " ", text)
    sentences = (" ".join(s.split()) for s in re.split(r"(?<=[.!?])\s+", text))
    # Sentences quoting our own protocol tags (<continuation_summary>, ...) would read as summaries.
    return [s for s in sentences if 40 <= len(s) <= 400 and "<" not in s]


class LongTask:
    """Turns of a coding-like task in one language/kind; files to read; the scripted model's answers."""

    def __init__(self, kind: str, seed: int = 1, note_bytes: int = 10_000) -> None:
        self.kind = kind
        self.rng = random.Random(f"{kind}-{seed}")
        self.note_bytes = note_bytes
        self.sentences = english_sentences()
        self.planted: list[str] = []
        self.paths: list[str] = []

    # -- the user's side ------------------------------------------------------------------

    def marker(self, turn: int) -> str:
        return f"ID-{self.kind}-{turn}-{hashlib.sha256(f'{self.kind}{turn}'.encode()).hexdigest()[:8]}"

    def _body(self, size: int) -> str:
        parts: list[str] = []
        total = 0
        while total < size:
            if self.kind == "chinese":
                piece = self.rng.choice(CHINESE.split("。")) + "。"
            elif self.kind == "ids":
                piece = (
                    orjson.dumps(
                        {
                            "id": str(uuid.UUID(int=self.rng.getrandbits(128))),
                            "sha": hashlib.sha1(str(self.rng.random()).encode()).hexdigest(),
                            "n": self.rng.randint(0, 10**9),
                        }
                    ).decode()
                    + ","
                )
            else:
                piece = self.rng.choice(self.sentences) + " "
            parts.append(piece)
            total += len(piece.encode())
        return "".join(parts)

    def note(self, turn: int, read: str | None = None) -> str:
        """The user's message of ``turn`` (about ``note_bytes``), planting a marker id and a path."""
        marker = self.marker(turn)
        path = f"src/{self.rng.choice(['budget', 'compact', 'core', 'memory'])}/{self.rng.choice(['plan', 'estimate', 'worker', 'store'])}.py"
        self.planted.append(marker)
        self.paths.append(path)
        ask = f"Please read {read} first. " if read else ""
        return f"Turn {turn}: {ask}Record {marker} for {path}. {self._body(self.note_bytes)}"

    def action_note(self, turn: int, files: list[str]) -> str:
        """A turn of a coding-like task: read a file, run a command, write a file, or just a note."""
        action = ("read", "note", "shell", "note", "write")[turn % 5]
        if action == "read":
            return self.note(turn, read=files[turn % len(files)])
        if action == "shell":
            return self.note(turn).replace(
                ": Record", f": Please run `wc -c {files[turn % len(files)]}` first. Record", 1
            )
        if action == "write":
            return self.note(turn).replace(": Record", f": Please write notes_{turn}.md first. Record", 1)
        return self.note(turn)

    def write_files(self, project: Path, count: int = 6) -> list[str]:
        """Files of 2-40 KB in the project for ``read``; returns their names."""
        names = []
        for index in range(count):
            name = f"file_{index}.txt"
            (project / name).write_text(self._body(self.rng.randint(2_000, 40_000)), encoding="utf-8")
            names.append(name)
        return names

    # -- the model's side ---------------------------------------------------------------

    def respond(self, request: dict[str, Any]) -> dict[str, Any]:
        """The scripted model: summaries for summary requests, a read when asked, else a short answer."""
        messages = request.get("messages") or []
        if not request.get("tools"):
            cap = request.get("max_completion_tokens") or request.get("max_tokens")
            return {"text": self.summary(messages, cap if isinstance(cap, int) else None)}
        last = messages[-1] if messages else {}
        content = last.get("content") if isinstance(last.get("content"), str) else ""
        if last.get("role") == "user":
            asked = re.search(r"Please read (\S+) first", content)
            if asked:
                return {"tool_calls": [{"name": "read", "arguments": {"path": asked.group(1)}}]}
            command = re.search(r"Please run `([^`]+)` first", content)
            if command:
                return {"tool_calls": [{"name": "shell", "arguments": {"command": command.group(1)}}]}
            target = re.search(r"Please write (\S+) first", content)
            if target:
                marker = _ID.search(content)
                return {
                    "tool_calls": [
                        {
                            "name": "write",
                            "arguments": {
                                "path": target.group(1),
                                "content": f"# notes\n{marker.group() if marker else ''}\n",
                            },
                        }
                    ]
                }
        turn = re.match(r"Turn (\d+)", content)
        return {"text": f"Done with turn {turn.group(1) if turn else '?'}; noted."}

    def summary(self, messages: list[dict[str, Any]], cap: int | None = None) -> str:
        """A diligent model's summary: every id and path of the transcript and the summary so far.

        Like a capable model, it stays within ``cap`` output tokens (the request's max tokens):
        when every id does not fit, the oldest go first and the summary says how many.
        """
        from i_scripted import reference_tokens

        text = "\n".join(str(m.get("content")) for m in messages)
        ids = sorted(set(_ID.findall(text)), key=lambda s: int(s.split("-")[2]))
        paths = sorted(set(_PATH.findall(text)))

        def render(kept: list[str]) -> str:
            dropped = [f"- ({len(ids) - len(kept)} older ids omitted)"] if len(kept) < len(ids) else []
            return "\n".join(
                [
                    "<continuation_summary>",
                    "## Latest user request",
                    "continue recording notes",
                    "## Recorded ids",
                    *dropped,
                    *(f"- {i}" for i in kept),
                    "## Files",
                    *(f"- {p}" for p in paths),
                    "## Next step",
                    "answer the next turn",
                    "</continuation_summary>",
                ]
            )

        kept = ids
        while cap is not None and kept and reference_tokens(render(kept)) > cap:
            kept = kept[max(1, len(kept) // 10) :]
        return render(kept)


def kept(task: LongTask, session_messages: list[dict[str, Any]], turns: int) -> tuple[int, int]:
    """(ids kept, ids planted) over the first ``turns`` turns, in the session as saved."""
    text = "\n".join(str(m.get("content")) for m in session_messages)
    planted = task.planted[:turns]
    return sum(1 for marker in planted if marker in text), len(planted)
