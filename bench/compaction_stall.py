"""What a user waits for on the turn that compacts: the console on a pseudo-terminal, the scripted
model answering a turn in 1 s and a summary in 2 s, the user thinking 3 s between turns.

Each session types 6 turns of ~4 KB into an 8k window (the trigger comes at turn 4, and each later
turn compacts again); a turn is timed from the Enter key to the next prompt. Turns are grouped into
normal turns (no compaction) and compacting turns (the status line's compaction count went up),
for ``prepare: "auto"`` (the summary prepared while the user reads) and ``"off"`` (today: made at
the trigger), sessions of the two interleaved, with a think time of 3 s and of 0 s. Prints medians, spreads (min-max and p10-p90)
and the ratios the issue asks for.

    python bench/compaction_stall.py                 # 10 sessions per row
    python bench/compaction_stall.py --sessions 3    # quicker

Needs every package installed (the e2e tox env: .tox/py311-e2e/bin/python bench/compaction_stall.py).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "e2e"))

from stall import FILLER, Console, ModelLog, config, responder

from i_scripted import ScriptedModel

TURNS = 6


def session(prepare: str, think: float, reply: float, summary: float) -> tuple[list[tuple[float, bool]], int]:
    """One console session: (seconds, compacted) per turn, and the summary requests it sent."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dirs = {key: root / key for key in ("config", "data", "cache", "runtime")}
        for folder in dirs.values():
            folder.mkdir()
        project = root / "project"
        project.mkdir()
        env = {**os.environ, **{f"I_{key.upper()}_DIR": str(path) for key, path in dirs.items()}}
        (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": []}))
        (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
        log = ModelLog()
        with ScriptedModel([responder(log, reply, summary)] * 100, context_window=9000) as model:
            (dirs["config"] / "config.json").write_bytes(orjson.dumps(config(model.base_url, prepare)))
            console = Console(project, env)
            try:
                console.prompt()
                times = []
                for n in range(TURNS):
                    if n:
                        time.sleep(think)
                    times.append(console.turn(f"turn {n}: {FILLER}"))
                console.close()
            finally:
                console.kill()
    return times, len(log.summaries())


def spread(values: list[float]) -> str:
    if not values:
        return "-"
    ordered = sorted(values)
    p10 = ordered[int(0.1 * (len(ordered) - 1))]
    p90 = ordered[int(0.9 * (len(ordered) - 1))]
    return (
        f"median {statistics.median(values):.2f} s  (n={len(values)}, min {ordered[0]:.2f}, "
        f"p10 {p10:.2f}, p90 {p90:.2f}, max {ordered[-1]:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--reply", type=float, default=1.0)
    parser.add_argument("--summary", type=float, default=2.0)
    parser.add_argument("--think", type=float, default=3.0)
    parser.add_argument("--no-zero", action="store_true", help="skip the rows with no think time")
    parser.add_argument("--only-zero", action="store_true", help="only the rows with no think time")
    args = parser.parse_args()
    thinks = [0.0] if args.only_zero else [args.think] if args.no_zero else [args.think, 0.0]
    print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.sessions} sessions x {TURNS} turns per row")
    medians: dict[tuple[str, float], tuple[float, float]] = {}
    for think in thinks:
        normal: dict[str, list[float]] = {"auto": [], "off": []}
        compacting: dict[str, list[float]] = {"auto": [], "off": []}
        summaries = {"auto": 0, "off": 0}
        for _ in range(args.sessions):  # interleaved, so that a change of the machine's load hits both
            for prepare in ("auto", "off"):
                times, sent = session(prepare, think, args.reply, args.summary)
                summaries[prepare] += sent
                for seconds, compacted in times:
                    (compacting if compacted else normal)[prepare].append(seconds)
        for prepare in ("auto", "off"):
            print(f"think {think:g} s, prepare {prepare}:")
            print(f"  normal turn      {spread(normal[prepare])}")
            print(f"  compacting turn  {spread(compacting[prepare])}")
            print(
                f"  summary requests: {summaries[prepare]} for {len(compacting[prepare])} compactions "
                "(cancelled ones included)"
            )
            if normal[prepare] and compacting[prepare]:
                typical, compact = statistics.median(normal[prepare]), statistics.median(compacting[prepare])
                print(f"  compacting / normal (medians): {compact / typical:.2f}x")
                medians[(prepare, think)] = (typical, compact)
    for think in thinks:
        auto, off = medians.get(("auto", think)), medians.get(("off", think))
        if auto and off:
            print(f"think {think:g} s: compacting turn auto / off = {auto[1] / off[1]:.2f}x")
    print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
