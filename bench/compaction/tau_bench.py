"""tau-bench airline: do the values the rest of a real task needs survive a compaction? (issue 17)

For each of the 200 real GPT-4o conversations of ``shared/corpora/tau-bench`` with at least
three user turns, the history is cut at the middle user message and ``history[1:cut]`` is
compacted by the real ``i-compact`` process. The values that matter are the string or integer
arguments (at any depth) of the conversation's ground-truth actions (``info.task.actions``)
that are at least 4 characters long, not purely alphabetic, and occur in the prefix (in the
content of its messages: user, assistant and tool results). A value is kept when the summary
contains it.

Modes:

- ``local``: ``before_compact`` in ``"mode":"local"``, then ``after_compact``;
- ``model``: ``before_compact`` in model mode; every summary request is built the way the core
  builds it (``i_protocol.summary.summary_request``) and POSTed to the scripted model over
  loopback HTTP; ``after_compact`` may ask for further rounds (at most 4, as the core allows);
- ``careless``: model mode with a summariser that drops every id and path it is sent (its
  replies keep only plain words), to show what the worker's check repairs.

Reported per mode: share of values kept, latest user request kept verbatim, summary bytes and
the reduction ``1 - estimate(summary message) / estimate(prefix)`` (``i_budget``'s comparable
estimate when it is installed). ``--drift`` also compacts each conversation five times in a
row (each generation's summary message + the next part of the conversation) and reports what of
generation 1's values is still there and whether any line of the state record is duplicated.

Old vs new: ``--worker-src DIR`` runs the worker from another source tree, e.g. HEAD's::

    git archive HEAD packages/worker-compact | tar -x -C /tmp/head
    python bench/compaction/tau_bench.py --modes local --worker-src /tmp/head/packages/worker-compact/src
    python bench/compaction/tau_bench.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run.py: the extractive scripted summariser

CORPUS = Path(__file__).resolve().parents[3] / "shared" / "corpora" / "tau-bench" / "gpt-4o-airline.json"
MIN_USER_TURNS = 3
MIN_VALUE_CHARS = 4
MAX_ROUNDS = 4
"""The core's ``MAX_AFTER_COMPACT_ROUNDS``: after_compact is called at most this many times."""
GENERATIONS = 5
REQUEST = {"capacity": 128000, "output_reserve": 4096, "tokens_per_byte": 0.3}
"""What ``compact_plan`` would put in ``state.request`` for a 128k window (the repair request's room)."""

try:
    from i_budget import comparable_estimate as _budget_estimate

    MEASURE = "i_budget.comparable_estimate"

    def measure(messages: list[dict[str, Any]]) -> int:
        """The comparable estimate of ``messages``."""
        return int(_budget_estimate(messages))

except ImportError:  # the budget worker is not installed: a plain, comparable byte size
    MEASURE = "UTF-8 bytes of the compact JSON of the messages"

    def measure(messages: list[dict[str, Any]]) -> int:
        """The comparable estimate of ``messages``."""
        return len(orjson.dumps(messages))


try:  # the scripted model moves to its own dev package; older trees keep it in the core
    from i_scripted import ScriptedModel
except ImportError:
    from i_core.scripted import ScriptedModel


# -- the corpus ---------------------------------------------------------------------------


def action_values(actions: list[dict[str, Any]]) -> list[str]:
    """String and integer arguments (at any depth) of ``actions``: >= 4 characters, not all letters."""
    found: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, (str, int)) and not isinstance(value, bool):
            text = str(value)
            if len(text) >= MIN_VALUE_CHARS and not text.isalpha() and text not in found:
                found.append(text)

    for action in actions:
        walk(action.get("kwargs") or {})
    return found


def cases(path: Path = CORPUS) -> list[dict[str, Any]]:
    """One case per conversation with >= 3 user turns whose prefix holds some action values."""
    out = []
    for item in json.loads(path.read_text()):
        history = item["traj"]
        users = [i for i, m in enumerate(history) if m.get("role") == "user"]
        if len(users) < MIN_USER_TURNS:
            continue
        cut = users[len(users) // 2]
        prefix = history[1:cut]
        text = "\n".join(m["content"] for m in prefix if isinstance(m.get("content"), str))
        values = [v for v in action_values(item["info"]["task"]["actions"]) if v in text]
        if not values:
            continue
        latest = next(m["content"] for m in reversed(prefix) if m.get("role") == "user")
        out.append({"task": item["task_id"], "history": history, "cut": cut, "values": values, "latest": latest})
    return out


# -- the worker and the scripted model ------------------------------------------------------


class Worker:
    """The real ``i-compact`` process in one mode (its own config/data/cache/runtime folders)."""

    def __init__(self, tmp: str, mode: str, source: str | None) -> None:
        from i_protocol.host import WorkerProcess

        dirs = {k: os.path.join(tmp, mode, k) for k in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
        for folder in dirs.values():
            os.makedirs(folder)
        Path(dirs["config_dir"], "compact.json").write_text(
            json.dumps({"mode": "local" if mode in ("local", "drift") else "model", "cache": False})
        )
        env = {"PATH": os.environ.get("PATH", "")} | {f"I_{k.upper()}": v for k, v in dirs.items()}
        if source:
            env["PYTHONPATH"] = source
        self.process = WorkerProcess.spawn([sys.executable, "-m", "i_compact"], env=env)

    def call(self, event: str, data: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.process.call(event, data, context={"workspace": "/project"}, timeout=60)
        return result

    def close(self) -> None:
        self.process.close()


def compact(worker: Worker, prefix: list[dict[str, Any]], cut: int, model: Any) -> tuple[str, dict[str, Any]]:
    """The final summary of ``prefix`` as the core would commit it, and the last state."""
    from i_protocol.summary import summary_request

    data = {"messages": prefix, "cut": cut, "state": {"request": REQUEST}, "model": "bench", "budget": {}}
    prepared = worker.call("before_compact", data)
    state = prepared.get("state") or {}
    if "summary" in prepared:
        summary = prepared["summary"]
    else:
        parts = prepared.get("chunks") or [prepared]
        summary = None
        for part in parts:
            summary = ask(model, summary_request(part["prompt"], part["messages"], summary))
        assert summary is not None
    for round_number in range(1, MAX_ROUNDS + 1):
        final = worker.call("after_compact", {"summary": summary, "state": state, "round": round_number})
        state = final.get("state") or state
        request = final.get("request")
        if request is None:
            return str(final["summary"]), state
        if model is None or round_number == MAX_ROUNDS:
            raise SystemExit("after_compact asked for more rounds than the core allows")
        summary = ask(model, summary_request(request["prompt"], request["messages"], summary))
    raise SystemExit("unreachable")


def ask(model: Any, messages: list[dict[str, Any]]) -> str:
    """One summary request to the scripted model over loopback HTTP."""
    body = orjson.dumps({"model": "bench-summariser", "messages": messages})
    request = urllib.request.Request(
        model.base_url + "/chat/completions", data=body, headers={"content-type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=60) as response:
        return str(orjson.loads(response.read())["choices"][0]["message"]["content"])


def summary_message(summary: str) -> dict[str, Any]:
    from i_core.compaction import summary_message as build

    message: dict[str, Any] = build(summary)
    return message


# -- the scripted summarisers ---------------------------------------------------------------


def _request_text(request: dict[str, Any]) -> str:
    content = request["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)


def _is_revision(request: dict[str, Any]) -> bool:
    return "<summary_so_far>" in _request_text(request)


def extractive(request: dict[str, Any]) -> dict[str, Any]:
    """A summariser that follows instructions: ``run.extractive_summary`` of a first request;
    for a revision (the worker names what is missing), the summary so far plus every named fact.
    """
    text = _request_text(request)
    if "<summary_so_far>" not in text:
        from run import extractive_summary

        return extractive_summary(request)
    so_far = text.split("<summary_so_far>\n", 1)[1].split("\n</summary_so_far>", 1)[0]
    listed = [line for line in text.splitlines() if line.startswith("- ")]
    body = so_far.replace("<continuation_summary>", "").replace("</continuation_summary>", "").strip()
    return {
        "text": "<continuation_summary>\n"
        + body
        + "\n## Added on revision\n"
        + "\n".join(listed)
        + "\n</continuation_summary>"
    }


def careless(request: dict[str, Any]) -> dict[str, Any]:
    """A careless summariser: it keeps only plain words, so every id, number and path is gone.

    It answers a revision request the same way: the drops are never repaired by the model.
    """
    text = _request_text(request).split("<untrusted_transcript>\n", 1)[-1]
    words = [w for w in text.split() if w.isalpha()][:150]
    return {
        "text": "<continuation_summary>\nThe user and the agent talked: "
        + " ".join(words)
        + "\n</continuation_summary>"
    }


# -- the runs -----------------------------------------------------------------------------


def latest_kept(summary: str, latest: str) -> bool:
    """The latest request verbatim: in the text, or (folded) as the state record's request."""
    if latest in summary:
        return True
    from i_compact.ledger import quote
    from i_compact.state_record import parse_record

    record = parse_record(summary)
    return record is not None and record.request == quote(latest)


def run_mode(worker: Worker, mode: str, chosen: list[dict[str, Any]]) -> dict[str, Any]:
    responder = careless if mode == "careless" else extractive
    kept = total = latest = digits = digits_kept = 0
    sizes: list[int] = []
    reductions: list[float] = []
    checks = {"facts": 0, "missing": 0, "repairedByModel": 0, "carriedForward": 0, "lost": 0}
    missing: list[str] = []
    with ScriptedModel([responder] * (len(chosen) * MAX_ROUNDS * 4)) as model:
        for case in chosen:
            prefix = case["history"][1 : case["cut"]]
            summary, state = compact(worker, prefix, case["cut"], None if mode == "local" else model)
            for value in case["values"]:
                total += 1
                has_digit = any(c.isdigit() for c in value)
                digits += has_digit
                if value in summary:
                    kept += 1
                    digits_kept += has_digit
                else:
                    missing.append(f"{case['task']}:{value}")
            latest += int(latest_kept(summary, case["latest"]))
            sizes.append(len(summary.encode()))
            reductions.append(1 - measure([summary_message(summary)]) / measure(prefix))
            check = (state.get("lastAttempt") or {}).get("ledgerCheck")
            if isinstance(check, dict) and check.get("status") == "checked":
                for key in ("facts", "missing", "repairedByModel", "carriedForward"):
                    checks[key] += int(check.get(key) or 0)
                checks["lost"] += _lost(summary, state)
    return {
        "mode": mode,
        "conversations": len(chosen),
        "values": total,
        "kept": kept,
        "digits": digits,
        "digits_kept": digits_kept,
        "latest": latest,
        "bytes_median": statistics.median(sizes),
        "bytes_max": max(sizes),
        "reduction_median": statistics.median(reductions),
        "check": checks,
        "missing": missing,
    }


def _lost(summary: str, state: dict[str, Any]) -> int:
    """Checked ledger facts that the committed summary (its state record included) lacks."""
    from i_compact.state_record import parse_record
    from i_compact.summary_check import missing

    ledger = parse_record(str(state.get("ledger") or ""))
    return len(missing(summary, ledger)) if ledger is not None else 0


def run_drift(worker: Worker, chosen: list[dict[str, Any]]) -> dict[str, Any]:
    """Five successive local compactions per conversation: generation 1's values and no duplicates.

    Generation k compacts ``[summary of k-1] + the next slice`` of the conversation: the whole
    history after the first cut is split into four slices at user messages.
    """
    from i_compact.state_record import entries

    first_values = kept = duplicated = conversations = 0
    for case in chosen:
        history = case["history"]
        users = [i for i, m in enumerate(history) if m.get("role") == "user" and i > case["cut"]]
        if len(users) < GENERATIONS - 1:
            continue
        conversations += 1
        step = max(1, len(users) // (GENERATIONS - 1))
        cuts = [case["cut"], *users[step - 1 :: step][: GENERATIONS - 1]]
        prefix = history[1 : cuts[0]]
        summary = ""
        for generation, cut in enumerate(cuts):
            summary, _ = compact(worker, prefix, cut, None)
            if generation + 1 < len(cuts):
                prefix = [summary_message(summary), *history[cut : cuts[generation + 1]]]
        first_values += len(case["values"])
        kept += sum(1 for value in case["values"] if value in summary)
        lines = entries(summary) or []
        duplicated += len(lines) - len(set(lines))
    return {"conversations": conversations, "values": first_values, "kept": kept, "duplicated": duplicated}


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}% ({part}/{whole})" if whole else "n/a"


def print_table(results: list[dict[str, Any]]) -> None:
    print(f"reduction measure: {MEASURE}")
    print(
        "| mode | conversations | action values kept | of them with a digit | latest request kept verbatim "
        "| summary bytes, median (max) | reduction, median |"
    )
    print("|---|---|---|---|---|---|---|")
    for r in results:
        print(
            f"| {r['mode']} | {r['conversations']} | {_pct(r['kept'], r['values'])} "
            f"| {_pct(r['digits_kept'], r['digits'])} | {_pct(r['latest'], r['conversations'])} | {r['bytes_median']:.0f} ({r['bytes_max']}) "
            f"| {100 * r['reduction_median']:.1f}% |"
        )
    checked = [r for r in results if r["check"]["facts"]]
    if checked:
        print(
            "\n| mode | ledger facts checked | missing from the model's summary | repaired by the model "
            "| carried forward | missing from the committed summary |"
        )
        print("|---|---|---|---|---|---|")
        for r in checked:
            c = r["check"]
            print(
                f"| {r['mode']} | {c['facts']} | {c['missing']} | {c['repairedByModel']} | {c['carriedForward']} "
                f"| {c['lost']} |"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modes", default="local,model,careless", help="comma-separated: local, model, careless")
    parser.add_argument("--drift", action="store_true", help="also run five successive local compactions")
    parser.add_argument("--worker-src", help="run the worker from this source folder (old vs new)")
    parser.add_argument("--limit", type=int, help="only the first N conversations")
    parser.add_argument("--json", help="also write the results (with every missing value) to this file")
    args = parser.parse_args()
    chosen = cases()[: args.limit]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            worker = Worker(tmp, mode, args.worker_src)
            try:
                results.append(run_mode(worker, mode, chosen))
            finally:
                worker.close()
        print_table(results)
        if args.drift:
            worker = Worker(tmp, "drift", args.worker_src)
            try:
                drift = run_drift(worker, chosen)
            finally:
                worker.close()
            print(
                f"\ndrift, {GENERATIONS} local generations: {drift['conversations']} conversations, generation 1's "
                f"values kept {_pct(drift['kept'], drift['values'])}, duplicated state-record lines {drift['duplicated']}"
            )
            results.append({"mode": "drift", **drift})
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
