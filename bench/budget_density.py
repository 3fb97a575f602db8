"""Benchmark: the budget's estimates of what no usage anchor covers, against a reference count, on real text.

Texts (all real except the id lists):
  tau      tau-bench airline conversations (/work/shared/corpora/tau-bench): English dialogue, JSON tool
           results full of ids, a 6 KB policy as system prompt
  code     this repository's packages/**/*.py read by a `read` tool
  docs     this repository's README.md / *.md files
  chinese  seed 001 (Chinese prose mixed with code and JSON, /work/shared/seeds/001_*.txt)
  ids      generated JSON lists of UUIDs, integers and hex digests (tool results of a lookup tool)

"Real" usage is the scripted model server's documented reference counter
(``i_scripted.prompt_tokens`` / ``reference_tokens``: a GPT-2-style split, ~4.5 bytes/token on English
prose, ~3 on code and Chinese, ~1.8 on id-dense JSON); there is no model in this sandbox.

Method, per kind: sessions of anchored turns as the core sends them (system prompt and the core's
built-in tool schemas; every request budget-checked, then anchored on the counted usage). After each
session, unanchored checks: compaction candidates (system + the core's summary message + the suffix,
at 4 cuts) and summary requests (the compact worker's prompt + the transcript of the prefix, no tools).
Three estimators on the same requests:
  utf8_bytes   1 token per byte (the estimate before this change; ``budget.tokenizer: "utf8_bytes"``)
  calibrated   the removed opt-in calibration, reimplemented here: ratio = min(ASCII bytes / input tokens
               over >= 3 whole-request samples of >= 2048 bytes with <= 10% non-ASCII) x 0.9; estimate =
               ASCII bytes / ratio + non-ASCII bytes (+ 16 framing); 1 token per byte before 3 samples
  density      this worker (per-class densities learned from the same anchors)
Ratio = estimate / real. Goals for density: worst ratio >= 0.9 (under-count within the margin), mean
over-count <= 25%. Also "shift": one model learns only docs sessions, then estimates the other kinds.
Timing: the handler on all 200 tau-bench conversations, twice, as one history (~3.9 MB), density vs
byte estimator, in the same run (interleaved).

    python bench/budget_density.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from i_budget import worker as budget_worker
from i_budget.observations import FileStore, MemoryStore
from i_compact.prompt import DEFAULT_PROMPT
from i_core.compaction import summary_message
from i_core.system_prompt import DEFAULT_SYSTEM_PROMPT
from i_core.tools.schemas import BUILTIN_SCHEMAS
from i_protocol.history import text_of
from i_protocol.summary import render_transcript
from i_scripted import prompt_tokens, reference_tokens

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path("/work/shared")
TAU = SHARED / "corpora" / "tau-bench" / "gpt-4o-airline.json"
ORIGIN = "http://127.0.0.1:8080"
TOOLS = BUILTIN_SCHEMAS
ESTIMATORS = ("utf8_bytes", "calibrated", "density")
KINDS = ("tau", "code", "docs", "chinese", "ids")
_ASCII = bytes(range(128))

# -- the reference count ------------------------------------------------------------------------------


def real_tokens(history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """The scripted server's prompt_tokens of this request on the OpenAI wire."""
    return prompt_tokens("openai", {"messages": history, "tools": [{"type": "function", "function": t} for t in tools]})


def reply_tokens(message: dict[str, Any]) -> int:
    total = reference_tokens(text_of(message))
    for call in message.get("tool_calls") or []:
        total += reference_tokens(call["function"]["name"]) + reference_tokens(call["function"]["arguments"])
    return max(1, total)


# -- the estimators -----------------------------------------------------------------------------------


def wire(history: list[dict[str, Any]]) -> bytes:
    views = [{k: v for k, v in m.items() if not k.startswith("_")} for m in history]
    return orjson.dumps(views, option=orjson.OPT_SORT_KEYS)


def tools_wire(tools: list[dict[str, Any]]) -> int:
    return len(orjson.dumps(tools)) + 30 * len(tools) if tools else 0


class OldCalibration:
    """The removed ``calibrate: true`` estimator, from its documented formula."""

    def __init__(self) -> None:
        self.samples: list[float] = []

    def learn(self, history: list[dict[str, Any]], tools: list[dict[str, Any]], input_tokens: int) -> None:
        raw = wire(history)
        nonascii = len(raw.translate(None, _ASCII))
        total = len(raw) + tools_wire(tools)
        if total < 2048 or nonascii > 0.1 * total:
            return
        ratio = (total - nonascii) / input_tokens
        if 0.25 <= ratio <= 16:
            self.samples = [*self.samples, ratio][-64:]

    def estimate(self, history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        raw = wire(history)
        nonascii = len(raw.translate(None, _ASCII))
        if len(self.samples) < 3:
            return len(raw) + tools_wire(tools) + 16
        ratio = round(min(self.samples) * 0.9, 4)
        return math.ceil((len(raw) - nonascii) / ratio) + nonascii + math.ceil(tools_wire(tools) / ratio) + 16


def request(
    history: list[dict[str, Any]],
    tools: list[dict[str, Any]],
    model: str,
    usage: dict[str, Any] | None,
    *,
    bytes_only: bool = False,
) -> dict[str, Any]:
    budget: dict[str, Any] = {"context_window": 10_000_000}
    if bytes_only:
        budget["tokenizer"] = "utf8_bytes"
    return {
        "model": model,
        "origin": ORIGIN,
        "budget": budget,
        "max_tokens": 8_000,
        "history": history,
        "tools": tools,
        "pending_tool_calls": 0,
        "compact": True,
        "usage": usage,
        "cut": None,
    }


def budget(data: dict[str, Any], workspace: Any = None) -> dict[str, Any]:
    return budget_worker.context_budget(data, workspace)["budget_result"]


# -- real text --------------------------------------------------------------------------------------


def paragraphs(text: str, low: int = 120, high: int = 1_200) -> list[str]:
    found = [p.strip() for p in text.split("\n\n")]
    return [p for p in found if low <= len(p.encode()) <= high]


def corpus() -> dict[str, Any]:
    code = [p.read_text() for p in sorted(ROOT.glob("packages/**/*.py")) if "__pycache__" not in p.parts]
    docs = [p.read_text() for p in sorted(ROOT.glob("**/*.md")) if ".tox" not in p.parts and ".venv" not in p.parts]
    english = [p for doc in docs for p in paragraphs(doc) if p[:1].isalpha() and p.isascii()]
    seed = next(SHARED.glob("seeds/001_*.txt")).read_text()
    chinese = [p for p in paragraphs(seed, 60, 2_000) if not p.isascii()]
    return {
        "code": code,
        "docs": docs,
        "english": english,
        "seed": seed,
        "chinese": chinese,
        "tau": [item["traj"] for item in orjson.loads(TAU.read_bytes())],
    }


def chunk(texts: list[str], rng: random.Random, size: int) -> str:
    text = rng.choice(texts)
    while len(text) < size:
        text += "\n\n" + rng.choice(texts)
    start = rng.randrange(max(1, len(text) - size))
    return text[start : start + size]


def id_list(rng: random.Random, size: int) -> str:
    items: list[Any] = []
    while len(orjson.dumps(items)) < size:
        pick = rng.random()
        if pick < 0.45:
            items.append(str(uuid.UUID(int=rng.getrandbits(128), version=4)))
        elif pick < 0.8:
            items.append(rng.randrange(10**15))
        else:
            items.append(f"{rng.getrandbits(160):040x}")
    return orjson.dumps(items).decode()


def tool_output(kind: str, texts: dict[str, Any], rng: random.Random) -> str:
    size = rng.randrange(2_000, 8_000)
    if kind == "code":
        return chunk(texts["code"], rng, size)
    if kind == "docs":
        return chunk(texts["docs"], rng, size)
    if kind == "chinese":
        return chunk([texts["seed"]], rng, size // 2)  # ~3 bytes a character
    return id_list(rng, size)


# -- sessions -----------------------------------------------------------------------------------------


class Run:
    """One model's learning state for the three estimators, and the ratios collected."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.calibration = OldCalibration()
        self.ratios: dict[str, dict[str, list[float]]] = {}

    def add(self, group: str, name: str, value: float) -> None:
        self.ratios.setdefault(group, {n: [] for n in ESTIMATORS})[name].append(value)


def replay(run: Run, history: list[dict[str, Any]], asks: list[int], collect: bool = True) -> dict[str, Any] | None:
    """Send ``history[:i]`` for every ``i`` in ``asks`` (the reply is ``history[i]``), anchored as the core does."""
    usage: dict[str, Any] | None = None
    for end in asks:
        sent = history[:end]
        result = budget(request(sent, TOOLS, run.model, usage))
        real = real_tokens(sent, TOOLS)
        if collect and result["estimate_method"] == "usage_anchor":
            run.add("anchored", "density", result["estimate"] / real)
        run.calibration.learn(sent, TOOLS, real)
        usage = {**result["anchor"], "input_tokens": real, "output_tokens": reply_tokens(history[end])}
    return usage


def evaluate(run: Run, history: list[dict[str, Any]], usage: dict[str, Any] | None, group_suffix: str = "") -> None:
    """Unanchored checks of 4 compaction candidates and their summary requests."""
    cuts = [i for i in range(2, len(history) - 1) if history[i]["role"] in ("user", "assistant")]
    if len(cuts) < 4:
        return
    last_user = max(i for i, m in enumerate(history) if m["role"] == "user")
    picks = sorted({cuts[len(cuts) // 4], cuts[len(cuts) // 2], cuts[3 * len(cuts) // 4], last_user})
    prompt = DEFAULT_PROMPT.replace("{{workspace}}", "/home/user/project")
    for cut in picks:
        prefix_text = "\n".join(text_of(m) for m in history[1:cut] if text_of(m)).encode()
        summary = prefix_text[-1_500:].decode("utf-8", "ignore")
        checks = (
            ("candidate", [history[0], summary_message(summary), *history[cut:]], TOOLS),
            (
                "summary",
                [{"role": "system", "content": prompt}, {"role": "user", "content": render_transcript(history[1:cut])}],
                [],
            ),
        )
        for group, messages, tools in checks:
            real = real_tokens(messages, tools)
            density = budget(request(messages, tools, run.model, usage))
            assert density["estimate_method"] != "usage_anchor"
            plain = budget(request(messages, tools, run.model, None, bytes_only=True))
            run.add(group + group_suffix, "density", density["estimate"] / real)
            run.add(group + group_suffix, "utf8_bytes", plain["estimate"] / real)
            run.add(group + group_suffix, "calibrated", run.calibration.estimate(messages, tools) / real)


def agent_session(kind: str, texts: dict[str, Any], rng: random.Random, turns: int) -> tuple[list, list[int]]:
    """A read-and-answer session: user asks, the model reads a file, the tool answers, the model answers."""
    history: list[dict[str, Any]] = [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT.replace("{{workspace}}", "/home/user/project")}
    ]
    asks = []
    prose = texts["chinese"] if kind == "chinese" else texts["english"]
    for turn in range(turns):
        history.append({"role": "user", "content": rng.choice(prose)})
        asks.append(len(history))
        args = orjson.dumps({"path": f"src/module_{turn}.py"}).decode()
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": f"call_{turn}", "type": "function", "function": {"name": "read", "arguments": args}}
                ],
            }
        )
        history.append({"role": "tool", "tool_call_id": f"call_{turn}", "content": tool_output(kind, texts, rng)})
        asks.append(len(history))
        history.append({"role": "assistant", "content": rng.choice(prose)})
    return history, asks


def tau_session(traj: list[dict[str, Any]]) -> tuple[list, list[int]]:
    asks = [
        i for i in range(2, len(traj)) if traj[i]["role"] == "assistant" and traj[i - 1]["role"] in ("user", "tool")
    ]
    return traj, asks


def run_kind(
    kind: str, texts: dict[str, Any], sessions: int, turns: int, run: Run | None = None, collect: bool = True
) -> Run:
    run = run or Run(f"bench-{kind}")
    rng = random.Random(kind)
    tau = rng.sample(texts["tau"], sessions) if kind == "tau" else []
    for number in range(sessions):
        history, asks = tau_session(tau[number]) if kind == "tau" else agent_session(kind, texts, rng, turns)
        usage = replay(run, history, asks, collect)
        if collect:
            evaluate(run, history, usage)
    return run


# -- report -------------------------------------------------------------------------------------------


def stats(values: list[float]) -> tuple[float, float, float]:
    """(min, median, mean over-count)."""
    return min(values), statistics.median(values), statistics.fmean(values) - 1


def report(runs: dict[str, Run]) -> None:
    print(f"\n{'kind':<9} {'checks':<10} {'n':>4} | " + " | ".join(f"{name:^24}" for name in ESTIMATORS))
    print(f"{'':<9} {'':<10} {'':>4} | " + " | ".join(f"{'min':>6} {'median':>7} {'mean+':>8}" for _ in ESTIMATORS))
    overall: dict[str, list[float]] = {name: [] for name in ESTIMATORS}
    for kind, run in runs.items():
        for group in ("candidate", "summary"):
            values = run.ratios.get(group)
            if not values:
                continue
            cells = []
            for name in ESTIMATORS:
                low, mid, over = stats(values[name])
                cells.append(f"{low:>6.2f} {mid:>7.2f} {over:>+8.1%}")
                if kind != "shift":
                    overall[name].extend(values[name])
            print(f"{kind:<9} {group:<10} {len(values['density']):>4} | " + " | ".join(cells))
    cells = [
        f"{stats(overall[n])[0]:>6.2f} {stats(overall[n])[1]:>7.2f} {stats(overall[n])[2]:>+8.1%}" for n in ESTIMATORS
    ]
    print(f"{'all':<9} {'both':<10} {len(overall['density']):>4} | " + " | ".join(cells))
    low, mid, over = stats(overall["density"])
    print(
        f"density: worst {low:.3f} ({'meets' if low >= 0.9 else 'MISSES'} >= 0.9), "
        f"mean over-count {over:+.1%} ({'meets' if over <= 0.25 else 'MISSES'} <= 25%)"
    )
    anchored = [
        v for kind, run in runs.items() if kind != "shift" for v in run.ratios.get("anchored", {}).get("density", [])
    ]
    if anchored:
        print(
            f"anchored checks (context): n={len(anchored)} min {min(anchored):.3f} median "
            f"{statistics.median(anchored):.3f} max {max(anchored):.3f}"
        )


def learned_rates(runs: dict[str, Run]) -> None:
    print("\nlearned tokens/byte per class (margin included; 1.0 = never a significant share: bytes)")
    for kind, run in runs.items():
        result = budget(request([{"role": "system", "content": "x"}], [], run.model, None))
        classes = result["density"]["classes"]
        print(
            f"  {kind:<8} "
            + "  ".join(
                f"{name} {info['tokens_per_byte']:.3f} ({info['observations']})" for name, info in classes.items()
            )
        )


# -- timing -------------------------------------------------------------------------------------------


class Workspace:
    """Stands in for the i_protocol Request: the handler only asks it for the workspace state folder."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def state_dir(self) -> Path:
        return self.path


def timed(funcs: dict[str, Callable[[], Any]], runs: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in funcs}
    for func in funcs.values():
        func()  # warm-up
    for _ in range(runs):
        for name, func in funcs.items():  # interleaved: load spikes hit every case alike
            start = time.perf_counter()
            func()
            samples[name].append((time.perf_counter() - start) * 1000)
    return samples


def timing(texts: dict[str, Any], runs: int) -> None:
    body = [m for traj in texts["tau"] for m in traj if m["role"] != "system"]
    history = [texts["tau"][0][0], *body, *body]  # every conversation twice: ~4 MB, the size of the 20 ms target
    size = len(wire(history))
    with tempfile.TemporaryDirectory(prefix="budget-density-") as tmp:
        workspace = Workspace(Path(tmp))
        model = "bench-timing"
        # Learn first (a few anchored prefixes of the same history), so the density path has rates.
        usage = None
        for end in (len(history) // 4, len(history) // 2, 3 * len(history) // 4, len(history) - 2):
            while history[end - 1]["role"] == "assistant":
                end -= 1
            result = budget(request(history[:end], TOOLS, model, usage), workspace)
            usage = {**result["anchor"], "input_tokens": real_tokens(history[:end], TOOLS), "output_tokens": 50}
        anchored_at = history[: len(history) - 2]
        template = budget(request(anchored_at, TOOLS, model, None), workspace)["anchor"]
        anchor = {**template, "input_tokens": real_tokens(anchored_at, TOOLS), "output_tokens": 50}
        cases: dict[str, Callable[[], Any]] = {
            "utf8_bytes unanchored": lambda: budget(request(history, TOOLS, model, None, bytes_only=True), workspace),
            "density unanchored": lambda: budget(request(history, TOOLS, model, None), workspace),
            "utf8_bytes anchored": lambda: budget(request(history, TOOLS, model, anchor, bytes_only=True), workspace),
            "density anchored": lambda: budget(request(history, TOOLS, model, anchor), workspace),
            "utf8_bytes forced (cut_estimates)": lambda: budget(
                {**request(history, TOOLS, model, None, bytes_only=True), "force": True}, workspace
            ),
            "density forced (cut_estimates)": lambda: budget(
                {**request(history, TOOLS, model, None), "force": True}, workspace
            ),
        }
        samples = timed(cases, runs)
        store = FileStore(Path(tmp) / "record-bench" / "density.json")
        counter = iter(range(10**9))
        records = timed(
            {
                "record": lambda: store.record(
                    f"{ORIGIN} m{next(counter) % 200}", str(next(counter)), [1.0, None, 1.0, None]
                )
            },
            runs,
        )["record"]
    print(
        f"\nhandler on all tau-bench conversations (twice) as one history: {size / 1e6:.2f} MB, {len(history)} messages, "
        f"{runs} interleaved runs; ms"
    )
    print(f"  {'case':<36} {'median':>8} {'p10':>8} {'p90':>8} {'vs bytes':>9}")
    for name, values in samples.items():
        ordered = sorted(values)
        base = statistics.median(samples[name.replace("density", "utf8_bytes")])
        p10 = ordered[round(0.1 * (len(ordered) - 1))]
        p90 = ordered[round(0.9 * (len(ordered) - 1))]
        print(
            f"  {name:<36} {statistics.median(values):>8.2f} {p10:>8.2f} {p90:>8.2f} "
            f"{statistics.median(values) / base:>8.2f}x"
        )
    print(f"  density.json record (lock, read, atomic write; 200 entries): median {statistics.median(records):.2f} ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer sessions and runs, for a smoke check")
    args = parser.parse_args()
    sessions, turns, runs = (2, 5, 5) if args.quick else (12, 10, 30)
    budget_worker._memory = MemoryStore()  # learning starts from nothing
    texts = corpus()
    runs_by_kind = {kind: run_kind(kind, texts, sessions, turns) for kind in KINDS}
    shift = run_kind("docs", texts, sessions, turns, Run("bench-shift"), collect=False)
    for kind in ("tau", "code", "chinese", "ids"):
        rng = random.Random(f"shift-{kind}")
        if kind == "tau":
            history = rng.choice(texts["tau"])
        else:
            history, _asks = agent_session(kind, texts, rng, turns)
        evaluate(shift, history, None)  # not replayed: this model learned docs only
    runs_by_kind["shift"] = shift
    print(
        f"estimate / reference count, {'quick' if args.quick else 'full'} run: {sessions} sessions per kind "
        f"({turns} turns each; tau: whole conversations); 4 cuts per session; "
        "min = worst under-count, mean+ = mean over-count"
    )
    print("shift: one model learned docs sessions only, then estimates tau/code/chinese/ids checks (not in 'all')")
    report(runs_by_kind)
    learned_rates(runs_by_kind)
    timing(texts, runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
