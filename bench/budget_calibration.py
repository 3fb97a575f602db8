"""Benchmark: estimate error of the budget estimators against (synthetic) real usage.

Replays generated agent transcripts request by request, as the core would, and compares each
estimator's input estimate with the "real" input tokens of that request. Real usage here is
SYNTHETIC (see bench/budget_transcripts.py: a documented regex pre-tokenizer rule, not a
provider tokenizer); there is no model in this sandbox.

Estimators, measured side by side on the same requests:
  utf8_bytes      plain byte estimate (no usage): the baseline
  calibrated      opt-in calibrated estimate (no usage), ratio learned from earlier requests
  anchor          last usage + plain bytes for the new messages (with or without calibration:
                  a learned ratio is never applied on top of an anchor)

Scenarios: "isolated" learns per transcript kind; "shift" learns on all kinds in sequence with
one model name (content changes under a learned ratio: the calibrated estimator's risk).

    python bench/budget_calibration.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from budget_transcripts import TOOLS, reference_tokens, request_tokens, transcript

from i_budget import estimate_budget
from i_budget.calibration import load_calibration, record_observation

ESTIMATORS = ("utf8_bytes", "calibrated", "anchor")
KINDS = ("prose", "code", "json", "cjk", "mixed")


def reply_tokens(message: dict[str, Any]) -> int:
    total = reference_tokens(message.get("content") or "")
    for call in message.get("tool_calls") or []:
        total += 3 + reference_tokens(call["function"]["name"]) + reference_tokens(call["function"]["arguments"])
    return total


def data(history: list[dict[str, Any]], model: str, usage: dict[str, Any] | None) -> dict[str, Any]:
    return {"model": model, "budget": {"context_window": 10_000_000}, "max_tokens": 8_000, "history": history,
            "tools": TOOLS, "pending_tool_calls": 0, "compact": True, "usage": usage, "cut": None}


def replay(history: list[dict[str, Any]], model: str, store: Path, errors: dict[str, list[float]]) -> None:
    """Send every request of ``history`` (each point where the model is asked) through the estimators."""
    usage: dict[str, Any] | None = None
    for end in range(2, len(history) + 1):
        if history[end - 1]["role"] not in ("user", "tool"):
            continue  # the model is asked after a user message or a tool result
        request = history[:end]
        real = request_tokens(request, TOOLS)
        learned = load_calibration(store, model).ratio or 1.0
        estimates = {
            "utf8_bytes": estimate_budget(data(request, model, None)).result["estimate"],
            "calibrated": estimate_budget(data(request, model, None), bytes_per_token=learned).result["estimate"],
        }
        if usage is not None:
            # What the worker does with calibrate=true and a usable anchor: anchored estimate, plain
            # bytes for the new messages, and one calibration sample recorded.
            outcome = estimate_budget(data(request, model, usage), bytes_per_token=learned, observe=True)
            estimates["anchor"] = outcome.result["estimate"]
            if outcome.observation is not None:
                record_observation(store, outcome.observation)
        for name, value in estimates.items():
            errors[name].append(value / real - 1)
        anchor = estimate_budget(data(request, model, None)).result["anchor"]
        reply = history[end] if end < len(history) else {"role": "assistant", "content": "done"}
        usage = {**anchor, "input_tokens": real, "output_tokens": reply_tokens(reply)}


def report(title: str, errors: dict[str, list[float]]) -> None:
    print(f"\n{title}: estimate / real - 1, over {len(errors['utf8_bytes'])} requests "
          "(ratio vs baseline = median error / utf8_bytes median error)")
    base = statistics.median(errors["utf8_bytes"])
    print(f"  {'estimator':<11} {'median':>8} {'p90':>8} {'max':>8} {'min':>8} {'under':>6} {'vs base':>8}")
    for name in ESTIMATORS:
        values = sorted(errors[name])
        if not values:
            continue
        p90 = values[min(len(values) - 1, round(0.9 * (len(values) - 1)))]
        under = sum(1 for value in values if value < 0)
        print(f"  {name:<11} {statistics.median(values):>+8.1%} {p90:>+8.1%} {values[-1]:>+8.1%} "
              f"{values[0]:>+8.1%} {under:>6} {statistics.median(values) / base:>8.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer turns")
    args = parser.parse_args()
    turns = 8 if args.quick else 30
    with tempfile.TemporaryDirectory(prefix="budget-cal-") as tmp:
        per_kind: dict[str, dict[str, list[float]]] = {}
        overall: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
        for kind in KINDS:
            errors: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
            replay(transcript(kind, turns), f"model-{kind}", Path(tmp) / "isolated.json", errors)
            per_kind[kind] = errors
            for name in ESTIMATORS:
                overall[name].extend(errors[name])
        shift: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
        for kind in KINDS:
            replay(transcript(kind, turns, seed=11), "one-model", Path(tmp) / "shift.json", shift)
    print("SYNTHETIC reference usage (regex pre-tokenizer rule, see bench/budget_transcripts.py); "
          f"{turns} turns per transcript")
    for kind, errors in per_kind.items():
        report(f"isolated, {kind}", errors)
    report("isolated, all kinds", overall)
    report("shift (prose -> code -> json -> cjk -> mixed, one learned ratio)", shift)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
