"""CPU of one local compaction of a huge history (issue 30 and [13]): this tree's worker beside another's.

The history is what ``tests/e2e/test_long_session.py`` inflates a session to before it asks for
``i --runtime compact``: 20 KB notes of English prose (``tests/e2e/long_task.py``), one per user
turn, each answered in one line, to ``--megabytes``. Each worker runs ``compact_plan``,
``before_compact`` and ``after_compact`` in-process in a fresh child (its source first on the
path); the child reports the thread CPU of each step, so a busy machine moves the figures less
than wall time would. The e2e test gives each call the seed's 15 s: on a machine whose two cores
are kept busy, a worker gets about half of one.

    git archive <old> packages/worker-compact | tar -x -C /tmp/old
    python bench/compaction/huge_history.py --old /tmp/old/packages/worker-compact/src \\
        --new packages/worker-compact/src
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

CHILD = r"""
import json, os, sys, tempfile, time
source, megabytes = sys.argv[1], float(sys.argv[2])
sys.path[:0] = [source, os.path.join(sys.argv[3], "tests", "e2e")]
tmp = tempfile.mkdtemp()
for key in ("config_dir", "data_dir", "cache_dir", "runtime_dir"):
    os.makedirs(os.path.join(tmp, key))
    os.environ["I_" + key.upper()] = os.path.join(tmp, key)
with open(os.path.join(tmp, "config_dir", "compact.json"), "w") as f:
    json.dump({"mode": "local", "cache": False, "keep_recent": 4}, f)
from long_task import LongTask
task = LongTask("english", seed=3, note_bytes=20_000)
history = [{"role": "system", "content": "You are i."}, {"role": "user", "content": "hello"},
           {"role": "assistant", "content": "ok"}]
size = turn = 0
while size < megabytes * 1e6:
    note = task.note(turn)
    history += [{"role": "user", "content": note},
                {"role": "assistant", "content": f"Done with turn {turn}; noted."}]
    size += len(note) + 40
    turn += 1
import i_compact.worker as W
from i_protocol.context import parse_context
from i_protocol.worker import Request
def request(event, data):
    return Request(W.worker, {"id": 1, "event": event, "data": data}, parse_context({"workspace": "/project"}))
tokens = size // 4
budget = {"fits": False, "estimate": tokens, "comparable_estimate": tokens, "trigger": 800000,
          "capacity": 1000000, "output_reserve": 1024, "recommend_compact": True}
times = {}
data = {"history": history, "cut": None, "budget_result": budget, "forced": True}
start = time.thread_time(); plan = W.compact_plan(data, request("compact_plan", data))
times["compact_plan"] = time.thread_time() - start
cut = plan["cut"]
data = {"messages": history[1:cut], "cut": cut, "state": plan["state"], "model": "bench", "budget": {}}
start = time.thread_time(); prepared = W.before_compact(data, request("before_compact", data))
times["before_compact"] = time.thread_time() - start
data = {"summary": prepared["summary"], "state": prepared["state"], "round": 1}
start = time.thread_time(); W.after_compact(data, request("after_compact", data))
times["after_compact"] = time.thread_time() - start
print(json.dumps({"times": times, "messages": len(history), "summary_bytes": len(prepared["summary"].encode())}))
"""


def run(source: str, megabytes: float) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, source, str(megabytes), str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", required=True, help="the baseline worker's source folder")
    parser.add_argument("--new", required=True, help="this tree's worker source folder")
    parser.add_argument("--megabytes", type=float, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[dict]] = {"old": [], "new": []}
    for round_number in range(args.rounds):  # interleaved, the order alternating
        order = [("old", args.old), ("new", args.new)]
        for label, source in order if round_number % 2 else reversed(order):
            results[label].append(run(source, args.megabytes))
    first = results["old"][0]
    print(f"{first['messages']} messages, {args.megabytes:g} MB, {args.rounds} rounds, thread CPU per step")
    print("| worker | compact_plan | before_compact, median (min-max) | after_compact | summary bytes |")
    print("|---|---|---|---|---|")
    for label in ("old", "new"):
        rows = results[label]
        before = [r["times"]["before_compact"] for r in rows]
        plan = statistics.median(r["times"]["compact_plan"] for r in rows)
        after = statistics.median(r["times"]["after_compact"] for r in rows)
        print(
            f"| {label} | {plan:.2f} s | {statistics.median(before):.2f} s ({min(before):.2f}-{max(before):.2f}) "
            f"| {after:.2f} s | {rows[0]['summary_bytes']:,} |"
        )
    old = statistics.median(r["times"]["before_compact"] for r in results["old"])
    new = statistics.median(r["times"]["before_compact"] for r in results["new"])
    print(f"\nnew / old, before_compact medians: {new / old:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
