"""Quality benchmark of compaction (issue 6): what survives, what shrinks, what leaks.

For every transcript of the seeded corpus (``corpus.py``) the real ``i-compact`` worker plans
the cut (``compact_plan`` with a ``budget_result`` that recommends compaction), then each
method replaces the prefix ``history[1:cut]``:

- ``head+tail``: the prefix rendered as the core renders a transcript, first 10% and last 10%
  of its characters kept (the same 80% reduction the target asks of local mode);
- ``keep-last-N``: the newest prefix messages that fit in 20% of the prefix (same budget),
  starting at a user/assistant message so no tool batch is split;
- ``worker local``: ``before_compact`` in ``"mode":"local"`` + ``after_compact``;
- ``worker model``: ``before_compact`` in model mode, the summary request built exactly as the
  core builds it (``i_protocol.summary.render_transcript``) and sent to the core's
  ``ScriptedModel`` server, whose step is the extractive responder below, then ``after_compact``.

The worker outputs become the core's summary message (``i_core.compaction.summary_message``).
Reduction is measured with the real budget worker's ``i_budget.comparable_estimate`` (message
wire bytes) when it is installed, else the UTF-8 size of the compact JSON of the messages.

    python bench/compaction/run.py            # 12 transcripts
    python bench/compaction/run.py --quick    # 4 transcripts
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from corpus import CRITICAL_KINDS, Fact, Transcript, generate

KEEP_SHARE = 0.2
METHODS = ("head+tail", "keep-last-N", "worker local", "worker model")
FACT_KINDS = ("approval", "resume", "tx", "job", "path", "request", "error")

try:
    from i_budget import comparable_estimate as _budget_estimate

    MEASURE = "i_budget.comparable_estimate (message wire bytes)"

    def measure(messages: list[dict[str, Any]]) -> int:
        """The comparable estimate of ``messages``."""
        return _budget_estimate(messages)

except ImportError:  # the budget worker is not installed: a plain, comparable byte size
    MEASURE = "UTF-8 bytes of the compact JSON of the messages"

    def measure(messages: list[dict[str, Any]]) -> int:
        """The comparable estimate of ``messages``."""
        return len(orjson.dumps(messages))


# -- the scripted summariser -------------------------------------------------------------

_ID = re.compile(r"\b(?:approval|plan|tx|job|run|todo|research|source)_[A-Za-z0-9_-]+")
_ERROR = re.compile(r"FAILED|Error\b|Traceback|Exception\b")
_PATHISH = re.compile(r"[\w.-]+(?:/[\w.-]+)+\.\w{1,5}")
_WRITE = re.compile(r"(?i)write|edit|patch|create|delete|move|rename")


def extractive_summary(request: dict[str, Any]) -> dict[str, str]:
    """The scripted model's reply: an extractive summary of the transcript it was sent.

    It reads only the user message of the request (the transcript the worker prepared, as the
    core wraps it) and copies, in this order: the last user turn; every ``"resume":`` value
    (balanced JSON scan, verbatim); every id token with the prefixes the default prompt names;
    path-like tokens from write/edit/patch tool-call lines; the last 10 lines that look like
    errors (each up to 300 characters); the last assistant turn (up to 500 characters). It
    invents nothing and cannot see anything the worker's preparation removed.
    """
    content = request["messages"][-1]["content"]
    text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    blocks = re.split(r"\n\n(?=\[(?:user|assistant|tool result [^\]]*)\]\n)", text)
    last_user = next((b for b in reversed(blocks) if b.startswith("[user]\n")), "")
    last_assistant = next((b for b in reversed(blocks) if b.startswith("[assistant]\n")), "")
    resumes = []
    for match in re.finditer(r'"resume"\s*:\s*', text):
        end = _json_end(text, match.end())
        if end is not None:
            resumes.append(text[match.end() : end])
    ids = list(dict.fromkeys(_ID.findall(text)))
    paths: list[str] = []
    for line in text.splitlines():
        if line.startswith("[tool call") and _WRITE.search(line.split(" ", 4)[3] if line.count(" ") > 3 else ""):
            paths.extend(p for p in _PATHISH.findall(line.replace("\\n", "\n")) if p not in paths)
    errors = [line.strip()[:300] for line in text.splitlines() if _ERROR.search(line)][-10:]
    parts = [
        "<continuation_summary>",
        "## Latest user request",
        last_user.removeprefix("[user]\n")[:2000],
        "## Pending approvals and resume calls",
        *(f"- resume = {r}" for r in resumes),
        "## Identifiers",
        *(f"- {i}" for i in ids),
        "## Modified artifacts",
        *(f"- {p}" for p in paths),
        "## Evidence",
        *(f"- {e}" for e in errors),
        "## Next step",
        last_assistant.removeprefix("[assistant]\n")[:500],
        "</continuation_summary>",
    ]
    return {"text": "\n".join(parts)}


def _json_end(text: str, start: int) -> int | None:
    """End of the JSON object or array starting at ``start`` (string-aware), or None."""
    if start >= len(text) or text[start] not in "{[":
        return None
    depth = 0
    in_string = escaped = False
    for pos in range(start, len(text)):
        char = text[pos]
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
            if depth == 0:
                return pos + 1
    return None


# -- methods ------------------------------------------------------------------------------


def head_tail(prefix: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Baseline: the rendered prefix, first and last 10% of its characters."""
    from i_core.compaction import summary_message
    from i_protocol.summary import render_transcript

    text = render_transcript(prefix)
    keep = int(len(text) * KEEP_SHARE / 2)
    omitted = len(text) - 2 * keep
    return [summary_message(f"{text[:keep]}\n…[{omitted} characters omitted]…\n{text[-keep:]}")]


def keep_last(prefix: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Baseline: the newest whole messages within 20% of the prefix, never splitting a batch."""
    budget = measure(prefix) * KEEP_SHARE
    start = len(prefix)
    for index in range(len(prefix) - 1, -1, -1):
        if measure(prefix[index:]) > budget:
            break
        if prefix[index].get("role") in ("user", "assistant"):
            start = index
    return prefix[start:]


class WorkerRoutes:
    """The real ``i-compact`` process in local and model mode, plus the scripted model."""

    def __init__(self, tmp: str, source: str | None = None) -> None:
        from i_protocol.host import WorkerProcess

        self.workers = {}
        for mode in ("local", "model"):
            dirs = {k: os.path.join(tmp, mode, k) for k in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
            for path in dirs.values():
                os.makedirs(path)
            Path(dirs["config_dir"], "compact.json").write_text(json.dumps({"mode": mode, "cache": False}))
            env = {"PATH": os.environ.get("PATH", "")} | {f"I_{k.upper()}": v for k, v in dirs.items()}
            if source:
                env["PYTHONPATH"] = source
            self.workers[mode] = WorkerProcess.spawn([sys.executable, "-m", "i_compact"], env=env)
        self.sent_to_model: list[str] = []

    def close(self) -> None:
        for worker in self.workers.values():
            worker.close()

    def plan(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        before = measure(history)
        budget_result = {
            "fits": False,
            "estimate": before,
            "comparable_estimate": before,
            "trigger": int(before * 0.8),
            "capacity": before,
            "recommend_compact": True,
        }
        return self.workers["local"].call(
            "compact_plan", {"history": history, "cut": None, "budget_result": budget_result}, timeout=60
        )

    def run(self, mode: str, history: list[dict[str, Any]], plan: dict[str, Any]) -> list[dict[str, Any]]:
        from i_core.compaction import summary_message
        from i_protocol.summary import render_transcript
        from i_scripted import ScriptedModel

        worker = self.workers[mode]
        cut = plan["cut"]
        data = {"messages": history[1:cut], "cut": cut, "state": plan["state"], "model": "bench", "budget": {}}
        prepared = worker.call("before_compact", data, context={"workspace": "/project"}, timeout=60)
        if mode == "local":
            summary = prepared["summary"]
        else:
            request = {
                "model": "bench-summariser",
                "messages": [
                    {"role": "system", "content": prepared["prompt"]},
                    {"role": "user", "content": render_transcript(prepared["messages"])},
                ],
            }
            self.sent_to_model.append(request["messages"][1]["content"])
            with ScriptedModel([extractive_summary]) as model:
                req = urllib.request.Request(
                    model.base_url + "/chat/completions",
                    data=orjson.dumps(request),
                    headers={"content-type": "application/json"},
                )
                with urllib.request.urlopen(req, timeout=60) as response:
                    summary = orjson.loads(response.read())["choices"][0]["message"]["content"]
        final = worker.call("after_compact", {"summary": summary, "state": prepared["state"]}, timeout=60)
        return [summary_message(final["summary"])]


# -- scoring ------------------------------------------------------------------------------


def output_text(messages: list[dict[str, Any]]) -> str:
    """Everything a resumed model would read: contents and tool-call arguments."""
    parts = []
    for message in messages:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else orjson.dumps(content).decode())
        for call in message.get("tool_calls") or []:
            parts.append(call["function"]["arguments"])
    return "\n".join(parts)


def scored_facts(transcript: Transcript, cut: int) -> list[Fact]:
    """Facts that lie in the prefix; of the requests, only the latest one counts."""
    facts = [f for f in transcript.facts if 1 <= f.index < cut]
    requests = [f for f in facts if f.kind == "request"]
    return [f for f in facts if f.kind != "request"] + requests[-1:]


def kept(fact: Fact, text: str, flat: str) -> bool:
    if fact.kind == "request":
        return " ".join(fact.value.split()) in flat
    return fact.value in text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker-src", help="run the worker from this source folder (old vs new)")
    parser.add_argument("--quick", action="store_true", help="4 transcripts instead of 12")
    parser.add_argument("--seeds", type=int, default=None, help="number of transcripts")
    parser.add_argument("--json", help="also write the per-transcript results to this file")
    args = parser.parse_args()
    count = args.seeds or (4 if args.quick else 12)
    totals = {
        m: {"reduction": [], "bytes": [], "kinds": {k: [0, 0] for k in FACT_KINDS}, "leaks": 0, "secrets": 0}
        for m in METHODS
    }
    rows = []
    sent_leaks = 0
    corpus_bytes = corpus_messages = 0
    with tempfile.TemporaryDirectory() as tmp:
        routes = WorkerRoutes(tmp, args.worker_src)
        try:
            for seed in range(1, count + 1):
                transcript = generate(seed)
                history = transcript.history
                corpus_bytes += len(orjson.dumps(history))
                corpus_messages += len(history)
                plan = routes.plan(history)
                cut = plan["cut"]
                if cut is None:
                    raise SystemExit(f"seed {seed}: compact_plan declined ({plan.get('reason')})")
                prefix = history[1:cut]
                facts = scored_facts(transcript, cut)
                before = measure(prefix)
                outputs = {
                    "head+tail": head_tail(prefix),
                    "keep-last-N": keep_last(prefix),
                    "worker local": routes.run("local", history, plan),
                    "worker model": routes.run("model", history, plan),
                }
                sent = routes.sent_to_model[-1]
                sent_leaks += sum(1 for f in facts if f.kind == "secret" and f.value in sent)
                row: dict[str, Any] = {"seed": seed, "messages": len(history), "cut": cut, "prefix": before}
                for method, output in outputs.items():
                    text = output_text(output)
                    flat = " ".join(text.split())
                    total = totals[method]
                    reduction = 1 - measure(output) / before
                    total["reduction"].append(reduction)
                    total["bytes"].append(len(text.encode()))
                    missing = []
                    for fact in facts:
                        if fact.kind == "secret":
                            total["secrets"] += 1
                            if fact.value in text:
                                total["leaks"] += 1
                                missing.append(f"LEAK {fact.value[:12]}…")
                            continue
                        ok = kept(fact, text, flat)
                        total["kinds"][fact.kind][0] += int(ok)
                        total["kinds"][fact.kind][1] += 1
                        if not ok:
                            missing.append(f"{fact.kind}:{fact.value[:40]}")
                    row[method] = {"reduction": round(reduction, 4), "missing": missing}
                rows.append(row)
        finally:
            routes.close()
    print_table(totals, count, corpus_messages, corpus_bytes, sent_leaks)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1, ensure_ascii=False))
    return 0


def _share(pairs: list[list[int]]) -> str:
    kept_count = sum(p[0] for p in pairs)
    total = sum(p[1] for p in pairs)
    return f"{100 * kept_count / total:.1f}% ({kept_count}/{total})" if total else "n/a"


def print_table(totals: dict[str, Any], count: int, messages: int, size: int, sent_leaks: int) -> None:
    print(f"corpus: {count} transcripts, {messages} messages, {size / 1e6:.1f} MB; reduction measure: {MEASURE}")
    head = (
        "| method | prefix reduction, median (min) | planted facts kept | protocol-critical ids kept "
        "| resume calls byte for byte | latest request | error to fix | modified paths | secrets leaked "
        "| output bytes, median (max) |"
    )
    print(head)
    print("|" + "---|" * 10)
    for method in METHODS:
        t = totals[method]
        kinds = t["kinds"]
        ids = [kinds[k] for k in CRITICAL_KINDS if k != "resume"]
        reductions = t["reduction"]
        print(
            f"| {method} | {100 * statistics.median(reductions):.1f}% ({100 * min(reductions):.1f}%) "
            f"| {_share(list(kinds.values()))} | {_share(ids)} | {_share([kinds['resume']])} "
            f"| {_share([kinds['request']])} | {_share([kinds['error']])} | {_share([kinds['path']])} "
            f"| {t['leaks']}/{t['secrets']} | {statistics.median(t['bytes']):,.0f} ({max(t['bytes']):,}) |"
        )
    print(f"\nsecret values present in the transcripts sent to the scripted model (model mode): {sent_leaks}")


if __name__ == "__main__":
    sys.exit(main())
