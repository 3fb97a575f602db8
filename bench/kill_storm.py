"""Kill storm: SIGKILL `i` mid-turn and mid-compaction, then start it again normally.

Two scenarios, N kills each, against the scripted model on loopback and the real budget and
compact workers (local compaction), plus one stubborn test worker that ignores SIGTERM and end of
input (in the runs that are killed), starts a sleeping child and writes both pids to a file:

- **mid-turn**: the model answers after a ``delay``; `i` is killed at a random moment between the
  model receiving the request and shortly after the reply is due (so some kills land while the
  reply is being saved);
- **mid-compaction**: a session over the budget is restored before each run, so the run compacts
  (locally) before its request; `i` is killed at a random moment after ``compact_plan`` answered,
  within the measured length of the rest of the compaction (summary, commit, backup, checkpoint).

After each kill: the process tree of the killed core (taken from /proc just before the kill:
workers and their children) is checked for survivors 1 s later; the session file (and the
``.precompact.json`` backup) is checked for being readable and valid; then `i` starts normally
with a new task and must succeed; the temporaries (``.*.tmp``) beside the session are counted
right after the kill and after that next start.

    python bench/kill_storm.py [--kills N] [--quick] [--seed S]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from i_scripted import ScriptedModel

try:
    from i_protocol.jsonsafe import loads_safe
except ImportError:  # an i-protocol from before the undecodable-text rule (for a before/after run)
    import json

    def loads_safe(raw: bytes) -> Any:  # type: ignore[misc]
        return json.loads(raw)


BIN = Path(sys.executable).parent
FILLER = "The build log said: " + "step ok; " * 150  # ~1.4 KB per user message
TURN_DELAY_S = 0.25

STUBBORN = """
import os, signal, subprocess, sys, time
from i_protocol import Worker
from i_protocol.worker import protect_stdio

signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
runtime = os.environ["I_RUNTIME_DIR"]
worker = Worker("stubborn", "0")
child = subprocess.Popen([sys.executable, "-c",
                          "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
with open(os.path.join(runtime, f"stubborn-{os.getpid()}.pids"), "w") as handle:
    handle.write(f"{os.getpid()} {child.pid}")


@worker.hook("before_turn", "compact_plan", "finish")
def mark(data, request):
    if request.event != "before_turn":
        with open(os.path.join(runtime, f"{request.event}.mark"), "w") as handle:
            handle.write(repr(time.monotonic()))
    return data


worker.serve(*protect_stdio())
# In the runs that get killed, end of input is ignored; the normal next start (no "deaf" file)
# exits on it, so that each normal exit does not wait out the pool's 2 s of TERM/KILL grace.
while os.path.exists(os.path.join(runtime, "deaf")):
    time.sleep(1)
"""


@dataclass
class Outcome:
    kills: int = 0
    torn: int = 0
    torn_backup: int = 0
    tmp_after_kill: int = 0
    tmp_after_start: int = 0
    next_failed: int = 0
    processes: int = 0
    orphans: int = 0
    dead_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def descendants(root: int) -> list[int]:
    """Every live process below ``root`` (workers and their children), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def valid_session(path: Path) -> bool:
    try:
        doc = loads_safe(path.read_bytes())
    except (OSError, ValueError):
        return False
    messages = doc.get("messages") if isinstance(doc, dict) else None
    return (
        isinstance(doc, dict)
        and doc.get("format") == "i-session/1"
        and isinstance(messages, list)
        and bool(messages)
        and all(isinstance(m, dict) for m in messages)
        and messages[0].get("role") == "system"
    )


class Box:
    """One isolated set of directories, a project, a manifest and the scripted model."""

    def __init__(self, root: Path, model: ScriptedModel) -> None:
        self.root = root
        self.dirs = {name: root / name for name in ("config", "data", "cache", "runtime", "project")}
        for path in self.dirs.values():
            path.mkdir(parents=True)
        self.env = dict(
            os.environ,
            I_CONFIG_DIR=str(self.dirs["config"]),
            I_DATA_DIR=str(self.dirs["data"]),
            I_CACHE_DIR=str(self.dirs["cache"]),
            I_RUNTIME_DIR=str(self.dirs["runtime"]),
        )
        self.model = model
        (self.dirs["config"] / "compact.json").write_bytes(orjson.dumps({"keep_recent": 2, "mode": "local"}))
        generated = subprocess.run(
            [str(BIN / "i"), "--runtime", "manifest", "compact"], env=self.env, capture_output=True, check=True
        ).stdout
        manifest = orjson.loads(generated)
        stubborn = root / "stubborn.py"
        stubborn.write_text(textwrap.dedent(STUBBORN))
        manifest["hooks"].append(
            {"events": ["before_turn", "compact_plan", "finish"], "exec": [sys.executable, str(stubborn)]}
        )
        self.manifest = root / "manifest.json"
        self.manifest.write_bytes(orjson.dumps(manifest))
        self.session = self.dirs["project"] / ".i" / "sessions" / "storm.json"
        self.window(100_000)

    def window(self, tokens: int) -> None:
        (self.dirs["config"] / "config.json").write_bytes(
            orjson.dumps(
                {
                    "protocol": "openai",
                    "base_url": self.model.base_url,
                    "model": "scripted-1",
                    "max_tokens": 256,
                    "stream": False,
                    "retries": 0,
                    "timeout": 60,
                    "budget": {"context_window": tokens},
                }
            )
        )

    def argv(self, task: str) -> list[str]:
        return [
            str(BIN / "i"),
            "-C",
            str(self.dirs["project"]),
            "--session-name",
            "storm",
            "--manifest",
            str(self.manifest),
            "--quiet",
            task,
        ]

    def run(self, task: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run(self.argv(task), env=self.env, capture_output=True, timeout=120)

    def start(self, task: str, *, deaf: bool = True) -> subprocess.Popen[bytes]:
        deaf_flag = self.dirs["runtime"] / "deaf"
        if deaf:
            deaf_flag.touch()
        else:
            deaf_flag.unlink(missing_ok=True)
        return subprocess.Popen(
            self.argv(task),
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def temporaries(self) -> int:
        folder = self.session.parent
        return (
            len([p for p in folder.iterdir() if p.name.startswith(".") and p.name.endswith(".tmp")])
            if folder.exists()
            else 0
        )


def respond(state: dict[str, Any]):
    def step(request: dict[str, Any]) -> dict[str, Any]:
        state["requests"] += 1
        turn = sum(1 for m in request.get("messages", []) if m.get("role") == "user")
        reply: dict[str, Any] = {"text": f"noted turn {turn}"}
        if state["delay"]:
            reply["delay"] = state["delay"]
        return reply

    return step


def kill_and_check(
    box: Box, core: subprocess.Popen[bytes], outcome: Outcome, next_task: str, state: dict[str, Any]
) -> None:
    tree = descendants(core.pid)
    core.send_signal(signal.SIGKILL)
    core.wait(30)
    killed_at = time.monotonic()
    outcome.kills += 1
    outcome.processes += len(tree)
    while any(alive(pid) for pid in tree) and time.monotonic() - killed_at < 1.0:
        time.sleep(0.005)
    survivors = [pid for pid in tree if alive(pid)]
    if not survivors:
        outcome.dead_ms.append((time.monotonic() - killed_at) * 1000)
    outcome.orphans += len(survivors)
    for pid in survivors:  # clean up, so that one kill's orphans never affect the next
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if box.session.exists() and not valid_session(box.session):
        outcome.torn += 1
        shutil.copy(box.session, box.root / f"torn-{outcome.kills}.json")
    backup = box.session.with_name("storm.precompact.json")
    if backup.exists() and not valid_session(backup):
        outcome.torn_backup += 1
    outcome.tmp_after_kill += box.temporaries()
    (box.dirs["runtime"] / "deaf").unlink(missing_ok=True)
    state["delay"] = 0
    done = box.run(next_task)
    if done.returncode != 0:
        outcome.next_failed += 1
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        outcome.failures.append(lines[-1] if lines else f"exit {done.returncode}")
    outcome.tmp_after_start += box.temporaries()
    for leftover in box.dirs["runtime"].glob("stubborn-*.pids"):
        leftover.unlink()


def wait_until(predicate, within: float) -> bool:
    stop = time.monotonic() + within
    while time.monotonic() < stop:
        if predicate():
            return True
        time.sleep(0.002)
    return False


def mid_turn(box: Box, state: dict[str, Any], kills: int, rng: random.Random) -> Outcome:
    outcome = Outcome()
    box.window(100_000)
    assert box.run("first turn").returncode == 0
    for n in range(kills):
        state["delay"] = TURN_DELAY_S
        before = state["requests"]
        core = box.start(f"turn {n}: {FILLER[:200]}")
        if not wait_until(lambda before=before: state["requests"] > before, 30):
            outcome.failures.append("the core never reached the model")
        time.sleep(rng.uniform(0, TURN_DELAY_S + 0.15))
        kill_and_check(box, core, outcome, f"after kill {n}", state)
    return outcome


def mid_compaction(box: Box, state: dict[str, Any], kills: int, rng: random.Random) -> Outcome:
    outcome = Outcome()
    box.window(100_000)
    for n in range(8):
        assert box.run(f"seed turn {n}: {FILLER}").returncode == 0
    seed = box.root / "seed.json"
    shutil.copy(box.session, seed)
    box.window(6_000)
    mark = box.dirs["runtime"] / "compact_plan.mark"
    finish = box.dirs["runtime"] / "finish.mark"
    # Calibration: from compact_plan's answer to the turn's finish in an unkilled run (the rest of
    # the compaction, its commit, the backup, the request and the checkpoints).
    spans = []
    for _ in range(3):
        shutil.copy(seed, box.session)
        mark.unlink(missing_ok=True)
        finish.unlink(missing_ok=True)
        core = box.start("calibrate", deaf=False)
        assert core.wait(60) == 0
        assert mark.exists(), "the seed session did not compact"
        spans.append(float(finish.read_text()) - float(mark.read_text()))
        assert valid_session(box.session) and box.session.with_name("storm.precompact.json").exists()
    window = statistics.median(spans)
    for n in range(kills):
        shutil.copy(seed, box.session)
        box.session.with_name("storm.precompact.json").unlink(missing_ok=True)
        mark.unlink(missing_ok=True)
        core = box.start(f"compacting run {n}")
        if not wait_until(mark.exists, 30):
            outcome.failures.append("no compact_plan call seen")
        time.sleep(rng.uniform(0, window))
        kill_and_check(box, core, outcome, f"after compaction kill {n}", state)
    outcome.failures.insert(0, f"kill window after compact_plan: 0-{window * 1000:.0f} ms")
    return outcome


def table(rows: list[tuple[str, Outcome]]) -> str:
    head = (
        "| scenario | kills | torn sessions | torn backups | `.*.tmp` after kill | `.*.tmp` after next start "
        "| next start failed | processes at kill | orphaned after 1 s | all dead within (median / max) |"
    )
    lines = [head, "|" + "---|" * 10]
    for name, o in rows:
        dead = f"{statistics.median(o.dead_ms):.0f} / {max(o.dead_ms):.0f} ms" if o.dead_ms else "—"
        lines.append(
            f"| {name} | {o.kills} | {o.torn} | {o.torn_backup} | {o.tmp_after_kill} | {o.tmp_after_start} "
            f"| {o.next_failed} | {o.processes} | {o.orphans} | {dead} |"
        )
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="kills per scenario (default 100)")
    parser.add_argument("--quick", action="store_true", help="10 kills per scenario")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    kills = 10 if args.quick else args.kills
    rng = random.Random(args.seed)
    state: dict[str, Any] = {"delay": 0, "requests": 0}
    rows = []
    started = time.monotonic()
    with ScriptedModel([respond(state)] * (kills * 8 + 100)) as model, tempfile.TemporaryDirectory() as tmp:
        for name, scenario in (("mid-turn", mid_turn), ("mid-compaction", mid_compaction)):
            box = Box(Path(tmp) / name, model)
            outcome = scenario(box, state, kills, rng)
            rows.append((name, outcome))
            notes = [f for f in outcome.failures if f]
            print(
                f"{name}: {outcome.kills} kills done"
                + (f"; notes: {'; '.join(sorted(set(notes))[:5])}" if notes else ""),
                file=sys.stderr,
            )
    print(table(rows))
    print(f"\n{sum(o.kills for _, o in rows)} kills in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
