"""pi sessions: our local summary against pi's own compaction summaries (issue 30, item 7).

For every ``compaction`` entry of a pi session transcript (JSON lines), the span pi compacted is
taken as pi took it: the entries since the previous compaction (or the start) up to
``firstKeptEntryIndex`` (v1 files: an index into the parsed entries, header included, malformed
lines skipped, as pi reads them) or ``firstKeptEntryId`` (v2/v3 files: the entry on the path from
the root to the compaction). A previous compaction's summary comes first, as the user message
"Previous session summary:" that pi itself sent. The span is converted to our history format by
the corpus's ``convert.py`` and compacted by the real ``i-compact`` process in local mode
(``tau_bench.Worker`` and ``tau_bench.compact``).

Reported per compaction: prefix bytes (compact JSON of the converted messages), pi's summary
bytes, our summary bytes, ours/pi, the paths of the span's ``edit``/``write`` tool calls kept in
each summary, and whether the latest user request of the span is kept verbatim in ours.

By default the dev corpus's pi session is read; more transcripts come as files or ``--extra DIR``
(every ``*.jsonl`` in it). Old vs new: ``--worker-src DIR``, as in ``tau_bench.py``.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "coding-runs"
DEFAULT = CORPUS / "dev" / "console-pi-5fd1e58c" / "session.jsonl"
MODIFYING_TOOLS = ("edit", "write")
PREVIOUS = "Previous session summary:\n"
"""How pi (compaction.ts, Dec 2025) hands the previous summary to the summariser."""

sys.path.insert(0, str(CORPUS))  # convert.py: the corpus's converter
sys.path.insert(0, str(Path(__file__).resolve().parent))  # tau_bench.py: the worker and its calls

import convert  # noqa: E402
from tau_bench import Worker, compact, latest_kept  # noqa: E402


def read_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of a pi file as pi reads them: blank and malformed lines skipped."""
    entries, _ = convert._read_lines(path.read_bytes().decode("utf-8"))
    return entries


def branch(entries: list[dict[str, Any]], index: int) -> tuple[list[dict[str, Any]], int]:
    """The entries pi's context held when it wrote ``entries[index]``, and the first kept one's index."""
    compaction = entries[index]
    if "firstKeptEntryIndex" in compaction:  # v1: a linear file
        return entries[:index], compaction["firstKeptEntryIndex"]
    position = {e["id"]: i for i, e in enumerate(entries) if "id" in e}
    path: list[dict[str, Any]] = []
    at = position.get(compaction.get("parentId"))
    while at is not None and at > 0:
        path.append(entries[at])
        parent = entries[at].get("parentId")
        # a parent lost to a malformed line: bridge it with the entry before it in the file
        at = None if parent is None else position.get(parent, at - 1)
    path.reverse()
    kept = next(i for i, e in enumerate(path) if e.get("id") == compaction["firstKeptEntryId"])
    return path, kept


def cases(path: Path) -> list[dict[str, Any]]:
    """One case per compaction entry of the pi file at ``path``."""
    entries = read_entries(path)
    out = []
    for index, entry in enumerate(entries):
        if entry.get("type") != "compaction":
            continue
        context, kept = branch(entries, index)
        previous = [i for i, e in enumerate(context[:kept]) if e.get("type") == "compaction"]
        span = context[previous[-1] + 1 if previous else 0 : kept]
        history = convert.convert_pi(span, {})
        if previous:
            history.insert(1, {"role": "user", "content": PREVIOUS + context[previous[-1]]["summary"]})
        history = convert._finish(history, {})
        out.append({"entry": index, "history": history, "pi": entry["summary"], **_facts(span)})
    return out


def _facts(span: list[dict[str, Any]]) -> dict[str, Any]:
    """The modified paths and the latest user request of a span of pi entries."""
    paths: list[str] = []
    latest = None
    for entry in span:
        if entry.get("type") != "message":
            continue
        message = entry["message"]
        if message.get("role") == "user":
            latest = convert._text_parts(message.get("content"))
        if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
            continue
        for part in message["content"]:
            if isinstance(part, dict) and part.get("type") == "toolCall" and part.get("name") in MODIFYING_TOOLS:
                target = (part.get("arguments") or {}).get("path")
                if isinstance(target, str) and target not in paths:
                    paths.append(target)
    return {"paths": paths, "latest": latest}


def label(path: Path) -> str:
    """A short name: the file's stem, or its folder's name for a file named ``session.jsonl``."""
    return path.parent.name if path.stem == "session" else path.stem


def run(worker: Worker, path: Path) -> list[dict[str, Any]]:
    rows = []
    for case in cases(path):
        prefix = case["history"][1:]
        ours, _ = compact(worker, prefix, len(case["history"]), None)
        rows.append(
            {
                "session": label(path),
                "entry": case["entry"],
                "messages": len(prefix),
                "prefix_bytes": len(json.dumps(prefix, ensure_ascii=False).encode()),
                "pi_bytes": len(case["pi"].encode()),
                "our_bytes": len(ours.encode()),
                "paths": len(case["paths"]),
                "ours_kept": [p for p in case["paths"] if p in ours],
                "pi_kept": [p for p in case["paths"] if p in case["pi"]],
                "latest": None if case["latest"] is None else latest_kept(ours, case["latest"]),
            }
        )
    return rows


def print_table(rows: list[dict[str, Any]]) -> None:
    print(
        "| session | compaction entry | prefix messages | prefix bytes | pi summary bytes | our summary bytes "
        "| ours / pi | modified paths kept, ours | kept, pi | latest request verbatim, ours |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        latest = "n/a" if r["latest"] is None else ("yes" if r["latest"] else "no")
        print(
            f"| {r['session']} | {r['entry']} | {r['messages']} | {r['prefix_bytes']:,} | {r['pi_bytes']:,} "
            f"| {r['our_bytes']:,} | {r['our_bytes'] / r['pi_bytes']:.2f}x | {len(r['ours_kept'])}/{r['paths']} "
            f"| {len(r['pi_kept'])}/{r['paths']} | {latest} |"
        )
    if rows:
        ours, pi = sum(r["our_bytes"] for r in rows), sum(r["pi_bytes"] for r in rows)
        at_most = sum(r["our_bytes"] <= r["pi_bytes"] for r in rows)
        print(
            f"\npooled ours / pi: {ours / pi:.2f}x ({ours:,} / {pi:,} bytes); ours at most pi's: {at_most} of {len(rows)}"
        )


def files(args: argparse.Namespace) -> list[Path]:
    chosen = [] if args.no_default else [DEFAULT]
    chosen += [Path(f) for f in args.files]
    for folder in args.extra:
        chosen += sorted(Path(folder).glob("*.jsonl"))
    for path in chosen:
        if "heldout" in path.resolve().parts:
            raise SystemExit(f"{path}: the heldout corpus is for the final measurement only; not read here")
    return chosen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="more pi session transcripts (JSON lines)")
    parser.add_argument("--extra", action="append", default=[], help="a folder: every *.jsonl in it")
    parser.add_argument("--no-default", action="store_true", help="skip the dev corpus's pi session")
    parser.add_argument("--worker-src", help="run the worker from this source folder (old vs new)")
    parser.add_argument("--json", help="also write the rows (with the kept paths) to this file")
    args = parser.parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        worker = Worker(tmp, "local", args.worker_src)
        try:
            for path in files(args):
                rows += run(worker, path)
        finally:
            worker.close()
    print_table(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
