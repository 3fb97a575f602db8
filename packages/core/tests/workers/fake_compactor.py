"""A scriptable budget + compactor for the core's compaction-transaction tests.

Reads its behaviour from the JSON file named by argv[1] on every call, so a test can change it:
  {"fits_over": N,            # history content chars above which context_budget says it does not fit
   "cut": ... | "none",       # compact_plan's answer ("last_tool" = the index of a tool message)
   "summary": "...",          # before_compact's local summary ("" for an empty one)
   "prompt": "...",           # model route instead of a local summary
   "crash": "compact_plan",   # an event to fail with an error frame
   "chunks": N,               # model route: split the prefix into N prepared requests
   "revise": N,               # after_compact asks for N further requests before accepting
   "second_cut": ... ,        # compact_plan's answer when called again with previous_attempt
   "provisional": true,       # context_budget's estimates rest on nothing observed
   "on_unfinished": "local" | "decline",  # compact_plan told summary_not_finished: a local summary, or decline
   "cut_estimates": true,     # context_budget's answer carries cut_estimates
   "tokens_per_byte": R,      # ... at this rate (default 1.0)
   "log": "PATH",             # append every compact_plan / before_compact / after_compact_commit data (JSON lines)
   "log_budget": true,        # ... and every context_budget data
   "anchored_estimate": N,    # with a usage anchor (and no summary in the history): this estimate, usage_anchor
   "method": "density",       # the estimate_method of every other estimate
   "policy": {...},           # merged into budget_result (trigger, output_reserve, context_window)
   "extensions": [...],       # what hello declares, read at start (default: every extension it uses)
   "package": ..., "version": ...}  # who hello says it is, read at start
"""

from __future__ import annotations

import json
import sys

from i_protocol import Worker, WorkerError

USED = (
    "after_compact_rounds",
    "chunks",
    "cut_estimates",
    "previous_attempt",
    "rejection",
    "summary_request_overhead",
    "tool_output_budget",
)
worker = Worker("fake-compact", "0", dist_name="fake-compactor")


def behaviour() -> dict:
    with open(sys.argv[1], encoding="utf-8") as handle:
        return json.load(handle)


# Declared in hello, as the real workers do; a test may declare less.
try:
    worker.extensions = tuple(behaviour().get("extensions", USED))
    worker.dist_name = behaviour().get("package", worker.dist_name)
    worker.version = behaviour().get("version", worker.version)
except (IndexError, OSError, ValueError):
    worker.extensions = USED


def size(history: list) -> int:
    return sum(len(json.dumps(m.get("content"))) for m in history)


def check(event: str) -> dict:
    conf = behaviour()
    if conf.get("crash") == event:
        raise WorkerError(f"fake compactor crashed on {event}")
    return conf


@worker.hook("context_budget")
def context_budget(data: dict, request) -> dict:
    conf = check("context_budget")
    estimate = size(data["history"])
    fits = estimate <= conf.get("fits_over", 10**9)
    data["budget_result"] = {
        "fits": fits,
        "estimate": estimate,
        "comparable_estimate": estimate,
        "recommend_compact": not fits and data.get("compact", False),
        "tool_output_budget": {"per_call_bytes": 100000},
        "reasons": [],
        "anchor": {"model": data["model"]},
        "provisional": conf.get("provisional", False),
    }
    anchored = conf.get("anchored_estimate")
    if anchored is not None and data.get("usage") and not any(m.get("_compaction") for m in data["history"]):
        data["budget_result"].update(estimate=anchored, estimate_method="usage_anchor")
    elif conf.get("method"):
        data["budget_result"]["estimate_method"] = conf["method"]
    data["budget_result"].update(conf.get("policy", {}))
    if conf.get("cut_estimates"):
        data["budget_result"]["cut_estimates"] = {
            "fixed_tokens": 1,
            "tokens_per_byte": conf.get("tokens_per_byte", 1.0),
            "suffix": [],
        }
    if conf.get("log_budget"):
        log(conf, "context_budget", data)
    return data


def log(conf: dict, event: str, data: dict) -> None:
    if conf.get("log"):
        record = {k: v for k, v in data.items() if k not in ("history", "messages")}
        if isinstance(data.get("history"), list):
            record["history_length"] = len(data["history"])
        with open(conf["log"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"event": event, **record}) + "\n")


@worker.hook("compact_plan")
def compact_plan(data: dict, request) -> dict:
    conf = check("compact_plan")
    log(conf, "compact_plan", data)
    cut = conf.get("cut", "none")
    if data.get("previous_attempt") and "second_cut" in conf:
        cut = conf["second_cut"]
    unfinished = (data.get("previous_attempt") or {}).get("reason") == "summary_not_finished"
    if unfinished and conf.get("on_unfinished") == "decline":
        cut = "none"
        data["reason"] = "summary_not_finished"
    history = data["history"]
    if cut == "none":
        cut = None
    elif cut == "last_tool":
        cut = max(i for i, m in enumerate(history) if m["role"] == "tool")
    elif cut == "keep_two":
        cut = len(history) - 2
    elif cut == "keep_four":
        cut = len(history) - 4
    data["cut"] = cut
    data["state"] = {"planned": True, "local": unfinished and conf.get("on_unfinished") == "local"}
    return data


@worker.hook("before_compact")
def before_compact(data: dict, request) -> dict:
    conf = check("before_compact")
    log(conf, "before_compact", data)
    if data["state"].get("local"):
        data["summary"] = "local summary after an unfinished one"
    elif conf.get("chunks"):
        messages, count = data.pop("messages"), conf["chunks"]
        size = max(1, -(-len(messages) // count))
        data["chunks"] = [
            {"prompt": f"part {n + 1}", "messages": messages[n * size : (n + 1) * size]} for n in range(count)
        ]
    elif "prompt" in conf:
        data["prompt"] = conf["prompt"]
    else:
        data["summary"] = conf.get("summary", "summary of earlier work")
    if conf.get("max_tokens") is not None:
        data["max_tokens"] = conf["max_tokens"]
    if conf.get("retained_images") is not None:
        data["retained_images"] = conf["retained_images"]
    return data


@worker.hook("after_compact")
def after_compact(data: dict, request) -> dict:
    conf = check("after_compact")
    if data.get("round", 1) <= conf.get("revise", 0):
        data["request"] = {
            "prompt": f"revise round {data['round']}",
            "messages": [{"role": "user", "content": "check the summary"}],
        }
    return data


@worker.hook("after_compact_commit")
def after_compact_commit(data: dict, request) -> dict:
    log(behaviour(), "after_compact_commit", data)
    return data


if __name__ == "__main__":
    sys.exit(worker.main([]))
