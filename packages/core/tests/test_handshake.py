"""The ``hello`` handshake, host side: every worker process is greeted once at its first call, a
silent one is unknown and works, an incompatible one is refused in one line before it is used,
and kept answers spare the round trip and any process started only to ask."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_core.__about__ import __version__
from i_core.errors import EXIT_WORKER, WorkerIncompatible
from i_core.handshake import Handshakes, KeptHellos, refusal
from i_core.manifest import Exec
from i_core.pool import WorkerPool
from i_protocol import paths_from_env
from i_protocol.handshake import UNKNOWN, Hello
from i_scripted import ScriptedModel

# A worker not built on i-protocol: logs every event it receives, answers per its mode.
RAW = r"""
import json, sys
mode, log = sys.argv[1], sys.argv[2] + "/events.log"
def note(text):
    with open(log, "a") as handle:
        handle.write(text + "\n")
if sys.argv[3:] == ["--version"]:
    note("--version")
    print({"old-budget": "i-worker-budget 0.1.0 (i-protocol 1)"}.get(mode, "raw-worker 1.0 (i-protocol 1)"))
    sys.exit(0)
for line in sys.stdin:
    frame = json.loads(line)
    note(frame["event"])
    data = frame.get("data", {})
    if frame["event"] == "hello" and mode == "protocol2":
        data = {"package": "raw-worker", "version": "9.0", "protocol": "2", "library": "none", "extensions": []}
    sys.stdout.write(json.dumps({"id": frame["id"], "data": data}) + "\n")
    sys.stdout.flush()
"""


def raw(tmp_path: Path, mode: str) -> tuple[list[str], Path]:
    script = tmp_path / "raw_worker.py"
    script.write_text(RAW)
    folder = tmp_path / f"{mode}-log"  # a folder: the files of a worker's argv are stamped, not this
    folder.mkdir()
    return [sys.executable, str(script), mode, str(folder)], folder / "events.log"


def events(log: Path) -> list[str]:
    return log.read_text().split() if log.exists() else []


# -- the verdict -------------------------------------------------------------------------------


def test_a_silent_worker_is_never_refused():
    assert refusal(UNKNOWN, "skills") is None
    assert refusal(Hello("house-worker", "0.0.1"), "budget") is None  # not one of ours


def test_an_old_budget_is_refused_in_one_line_naming_the_release_needed_and_the_fix():
    line = refusal(Hello("i-worker-budget", "0.1.0"), "budget", "/opt/old/i-budget")
    assert line is not None and "\n" not in line
    assert "worker budget (/opt/old/i-budget) is i-worker-budget 0.1.0" in line
    assert "needs i-worker-budget>=0.2.0" in line and "pipx install 'i-worker-budget>=0.2.0'" in line
    assert "bindings.json" in line
    assert refusal(Hello("i-worker-budget", "0.2.0", known=True), "budget") is None


def test_a_declared_protocol_2_is_refused():
    line = refusal(Hello("x", "9", "2", known=True), "skills")
    assert line is not None and "declares protocol 2" in line and f"i-core {__version__} speaks protocol 1" in line


# -- the pool: one round trip per process, at its first call -----------------------------------


class Double:
    def __init__(self, answer_hello: dict[str, Any] | None = None) -> None:
        self.calls: list[str] = []
        self.alive = True
        self.answer_hello = answer_hello

    def call(self, event, data, *, context=None, timeout=0):
        self.calls.append(event)
        return self.answer_hello if event == "hello" and self.answer_hello is not None else data

    def kill(self):
        self.alive = False

    def close(self, grace=0):
        self.alive = False


def test_each_process_is_greeted_once_at_its_first_call(dirs, tmp_path):
    started: list[Double] = []

    def spawn(spec):
        started.append(Double())
        return started[-1]

    pool = WorkerPool(paths_from_env(), spawn=spawn, handshakes=Handshakes())
    spec = Exec(argv=("worker",), cwd=str(tmp_path))
    pool.start([spec])
    assert started[0].calls == []  # starting asks nothing
    pool.call(spec, "before_turn", {"a": 1}, module="skills")
    pool.call(spec, "before_turn", {"a": 2}, module="skills")
    assert started[0].calls == ["hello", "before_turn", "before_turn"]
    assert pool.handshakes is not None and pool.handshakes.said(spec) == UNKNOWN


def test_a_worker_declaring_protocol_2_is_refused_before_its_first_call_and_stopped(dirs, tmp_path):
    two = {"package": "w", "version": "9", "protocol": 2, "library": "x", "extensions": []}
    double = Double(two)
    pool = WorkerPool(paths_from_env(), spawn=lambda spec: double, handshakes=Handshakes())
    with pytest.raises(WorkerIncompatible, match="declares protocol 2"):
        pool.call(Exec(argv=("worker",), cwd=str(tmp_path)), "before_turn", {}, module="skills")
    assert double.calls == ["hello"] and not double.alive


def test_a_kept_answer_spares_the_round_trip(dirs, tmp_path):
    program = tmp_path / "worker.py"
    program.write_text("")
    spec = Exec(argv=(sys.executable, str(program)), cwd=str(tmp_path))
    kept = KeptHellos(str(dirs["cache"]), {})
    answer = {"package": "w", "version": "1", "protocol": "1", "library": "0.2", "extensions": ["chunks"]}
    first = Double(answer)
    WorkerPool(paths_from_env(), spawn=lambda s: first, handshakes=Handshakes(kept)).call(spec, "e", {})
    again = Double(answer)
    handshakes = Handshakes(kept)
    WorkerPool(paths_from_env(), spawn=lambda s: again, handshakes=handshakes).call(spec, "e", {})
    assert first.calls == ["hello", "e"] and again.calls == ["e"]
    assert handshakes.declared(spec, "chunks") and not handshakes.declared(spec, "rejection")
    os.utime(program, ns=(1, 1))  # the program changed: asked again
    third = Double(answer)
    WorkerPool(paths_from_env(), spawn=lambda s: third, handshakes=Handshakes(kept)).call(spec, "e", {})
    assert third.calls == ["hello", "e"]


@pytest.mark.parametrize(
    ("hello", "declared"),
    [
        (Hello("i-worker-budget", "0.2.2", library="0.2.4", known=True), True),  # before the declarations
        (Hello("i-worker-budget", "0.2.1"), True),  # silent, known by its --version line
        (Hello("i-worker-budget", "0.2.3", library="0.2.4", known=True), False),  # declares: taken at its word
        (Hello("house-budget", "0.2.2", library="0.2.4", known=True), False),  # not ours
        (UNKNOWN, False),
    ],
)
def test_a_release_of_ours_from_before_the_declarations_uses_what_the_table_says(hello, declared):
    from i_core.compatibility import extensions_of

    assert ("cut_estimates" in extensions_of(hello)) is declared
    assert "chunks" not in extensions_of(hello)


# -- the real `i` ------------------------------------------------------------------------------


def one_shot(dirs, project, model, profile: str, bindings: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": profile, "disabled": []}))
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps(bindings))
    (dirs["config"] / "builtin.json").write_bytes(b'{"builtin_profile":"configured","tools":[]}')
    settings = {"protocol": "openai", "base_url": model.base_url, "model": "scripted-1", "retries": 0}
    (dirs["config"] / "config.json").write_bytes(orjson.dumps(settings))
    env = {**os.environ, **{f"I_{key.upper()}_DIR": str(path) for key, path in dirs.items()}}
    command = [sys.executable, "-m", "i_core", "-C", str(project), "say hi"]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)


def errors(run: subprocess.CompletedProcess[str]) -> list[str]:
    """The error lines of a run's stderr (without its ``[i]`` summary)."""
    return [line for line in run.stderr.splitlines() if not line.startswith("[i] ")]


def test_an_old_budget_silent_to_hello_is_refused_before_the_first_request(dirs, project, tmp_path):
    argv, log = raw(tmp_path, "old-budget")
    with ScriptedModel([{"text": "never sent"}]) as model:
        first = one_shot(dirs, project, model, "budget", {"budget": {"exec": argv}})
        second = one_shot(dirs, project, model, "budget", {"budget": {"exec": argv}})
        assert model.requests == []
    for run in (first, second):
        assert run.returncode == EXIT_WORKER, run.stderr
        lines = errors(run)
        assert len(lines) == 1, run.stderr
        assert "i-worker-budget 0.1.0" in lines[0] and "pipx install 'i-worker-budget>=0.2.0'" in lines[0]
    # The first run asked hello, then --version once; the second used the kept answer: no
    # process started to ask, no hello sent, and the budget never got a context_budget.
    assert events(log) == ["hello", "--version"]


def test_a_worker_silent_to_hello_works_and_a_kept_answer_is_not_asked_again(dirs, project, tmp_path):
    argv, log = raw(tmp_path, "silent")
    with ScriptedModel([{"text": "Hi there."}, {"text": "Hi again."}]) as model:
        first = one_shot(dirs, project, model, "skills", {"skills": {"exec": argv}})
        second = one_shot(dirs, project, model, "skills", {"skills": {"exec": argv}})
    assert first.returncode == 0 and second.returncode == 0, first.stderr + second.stderr
    assert "Hi again." in second.stdout
    # hello once in all: the second run's answer was kept; never a --version for a slot of the core.
    assert events(log).count("hello") == 1 and "--version" not in events(log)
    assert events(log).count("before_turn") == 2


def test_a_worker_declaring_protocol_2_stops_the_run_before_the_first_request(dirs, project, tmp_path):
    argv, _log = raw(tmp_path, "protocol2")
    with ScriptedModel([{"text": "never sent"}]) as model:
        run = one_shot(dirs, project, model, "skills", {"skills": {"exec": argv}})
        assert model.requests == []
    assert run.returncode == EXIT_WORKER and "declares protocol 2" in run.stderr
    assert len(errors(run)) == 1


# -- `i --runtime versions` and `check` --------------------------------------------------------


def test_versions_fails_a_worker_that_declares_protocol_2(dirs, tmp_path):
    argv, _log = raw(tmp_path, "protocol2")
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "skills", "disabled": []}))
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"skills": {"exec": argv}}))
    command = [sys.executable, "-m", "i_core", "--runtime", "versions", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == EXIT_WORKER, done.stderr
    row = next(r for r in orjson.loads(done.stdout)["modules"] if r["module"] == "skills")
    assert (row["verdict"], row["handshake"], row["protocol"]) == ("incompatible", "answered", "2")
    assert "declares protocol 2" in row["problem"]


def test_versions_shows_what_a_silent_worker_and_our_workers_said(dirs, tmp_path):
    argv, _log = raw(tmp_path, "silent")
    (dirs["config"] / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": []}))
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"steering": {"exec": argv}}))
    command = [sys.executable, "-m", "i_core", "--runtime", "versions", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    rows = {r["module"]: r for r in orjson.loads(done.stdout)["modules"]}
    assert (rows["steering"]["verdict"], rows["steering"]["handshake"]) == ("unknown", "silent")
    budget = rows["budget"]
    if budget["status"] == "installed":
        assert (budget["verdict"], budget["handshake"]) == ("compatible", "answered")
        assert "cut_estimates" in budget["extensions"]


@pytest.mark.parametrize(("mode", "passed"), [("protocol2", False), ("silent", True)])
def test_check_fails_a_worker_that_declares_protocol_2_and_passes_a_silent_one(dirs, tmp_path, mode, passed):
    from i_core.check.framing import handshake
    from i_core.check.probe import CheckFailed, Run, Target
    from i_core.check.suite import temporary_site

    argv, _log = raw(tmp_path, mode)
    with temporary_site() as site:
        run = Run("skills", Target(tuple(argv), str(tmp_path), "--exec"), site)
        if passed:
            assert handshake(run).startswith("silent: unknown, protocol 1")
        else:
            with pytest.raises(CheckFailed, match="declares protocol 2"):
                handshake(run)


def test_check_fails_an_old_budget_by_its_version_line(dirs, tmp_path):
    from i_core.check.framing import handshake
    from i_core.check.probe import CheckFailed, Run, Target
    from i_core.check.suite import temporary_site

    argv, _log = raw(tmp_path, "old-budget")
    with temporary_site() as site, pytest.raises(CheckFailed, match=r"needs i-worker-budget>=0\.2\.0"):
        handshake(Run("budget", Target(tuple(argv), str(tmp_path), "--exec"), site))
