"""The hard cases of the worker protocol, through the real `i` and real processes.

- a workspace folder whose name is not UTF-8 (``caf\\xe9``, made with ``os.mkdir(bytes)``);
- a worker that exits mid-call while a grandchild still holds its stdout;
- a core that is SIGKILLed mid-call while its worker is busy or deaf to end of input.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import orjson
import pytest

from i_core.errors import WorkerFailure
from i_core.manifest import Exec
from i_core.pool import WorkerPool, worker_name
from i_protocol import paths_from_env
from i_protocol.testing import alive, scaled, wait_dead
from i_scripted import ScriptedModel

LATIN1 = b"caf\xe9"  # "café" in ISO-8859-1


def wait_for(path: Path, within: float = 30.0) -> str:
    stop = time.monotonic() + scaled(within)
    while time.monotonic() < stop:
        if path.exists():
            return path.read_text()
        time.sleep(0.02)
    raise AssertionError(f"{path} did not appear within {within}s")


def write_script(tmp_path: Path, name: str, code: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(code))
    return [sys.executable, str(path)]


def write_config(dirs, base_url: str) -> None:
    (dirs["config"] / "config.json").write_bytes(
        orjson.dumps(
            {
                "protocol": "openai",
                "base_url": base_url,
                "model": "scripted-1",
                "max_tokens": 256,
                "retries": 0,
                "timeout": scaled(30),
                "stream": False,
                "budget": {"context_window": 100000},
            }
        )
    )


def latin1_folder(tmp_path: Path) -> str:
    raw = os.fsencode(str(tmp_path)) + b"/" + LATIN1
    os.mkdir(raw)
    with open(raw + b"/README.md", "wb") as handle:
        handle.write(b"# caf\xc3\xa9\n")
    return os.fsdecode(raw)


def env_of(dirs) -> dict[str, str]:
    value = dict(os.environ)  # the dirs fixture has set the four I_*_DIR in it
    return value


# -- 5. input that is not UTF-8 ---------------------------------------------------------------

_WORKSPACE_REPORTER = """
    import os, sys
    from i_protocol import Worker

    worker = Worker("where", "0")

    @worker.hook("before_turn")
    def where(data, request):
        # ASCII only in the answer, so that the test reads exactly which bytes the worker got.
        data["workspace_hex"] = os.fsencode(request.workspace).hex()
        data["listing"] = sorted(os.listdir(request.workspace))
        data["workspace_id"] = request.workspace_id()
        return data

    sys.exit(worker.main())
"""


def test_a_latin1_workspace_reaches_workers_losslessly(dirs, tmp_path):
    folder = latin1_folder(tmp_path)
    manifest = tmp_path / "m.json"
    manifest.write_bytes(
        orjson.dumps(
            {"hooks": [{"events": ["before_turn"], "exec": write_script(tmp_path, "where.py", _WORKSPACE_REPORTER)}]}
        )
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "i_core",
            "--runtime",
            "hook",
            "before_turn",
            "-C",
            os.fsencode(folder),
            "--manifest",
            str(manifest),
        ],
        input=b"{}",
        capture_output=True,
        timeout=scaled(60),
        env=env_of(dirs),
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    answer = orjson.loads(done.stdout)
    assert bytes.fromhex(answer["workspace_hex"]) == os.fsencode(folder)  # the real bytes, not a lookalike
    assert answer["listing"] == ["README.md"]
    from i_protocol.jsonsafe import loads_safe

    registry = loads_safe((dirs["data"] / "workspaces.json").read_bytes())
    assert [entry["id"] for entry in registry["workspaces"].values()] == [answer["workspace_id"]]


@pytest.mark.parametrize("where", ["workspace", "argv", "stdin"])
def test_undecodable_input_works_end_to_end_against_the_scripted_model(dirs, tmp_path, where):
    folder = latin1_folder(tmp_path) if where == "workspace" else str(tmp_path)
    prompts = [sys.executable, "-m", "i_core", "--runtime", "worker", "prompts"]
    manifest = tmp_path / "m.json"
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["system_prompt"], "exec": prompts}]}))
    task = b"say hi" if where == "workspace" else b"say hi to caf\xe9"
    argv = [sys.executable, "-m", "i_core", "-C", os.fsencode(folder), "--manifest", str(manifest)]
    with ScriptedModel([{"text": "hi"}]) as model:
        write_config(dirs, model.base_url)
        done = subprocess.run(
            argv + ([] if where == "stdin" else [task]),
            input=task + b"\n" if where == "stdin" else b"",
            capture_output=True,
            timeout=scaled(60),
            env=env_of(dirs),
        )
    assert b"Traceback" not in done.stderr, done.stderr.decode(errors="replace")
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert done.stdout.decode().strip() == "hi"
    sent = model.requests[0].body["messages"]
    # The model gets strict Unicode: the undecodable byte shown as \xe9; the session keeps it losslessly.
    shown = sent[0]["content"] if where == "workspace" else sent[-1]["content"]
    assert "caf\\xe9" in shown


# -- 6. a worker that died, noticed at once ---------------------------------------------------

_EXITS_LEAVING_A_GRANDCHILD = """
    import json, os, subprocess, sys
    for raw in sys.stdin.buffer:
        request = json.loads(raw)
        if request["data"].get("die"):
            # The helper inherits stdout and outlives this worker: the pipe never reaches EOF.
            child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
            with open(os.environ["I_RUNTIME_DIR"] + "/grandchild.pid", "w") as handle:
                handle.write(str(child.pid))
            os._exit(3)
        sys.stdout.write(json.dumps({"id": request["id"], "data": {"pid": os.getpid()}}) + "\\n")
        sys.stdout.flush()
"""


def test_the_pool_fails_at_once_when_a_worker_exits_leaving_a_grandchild(dirs, tmp_path):
    spec = Exec(argv=tuple(write_script(tmp_path, "dies.py", _EXITS_LEAVING_A_GRANDCHILD)), cwd=str(tmp_path))
    pool = WorkerPool(paths_from_env())  # the real 15 s deadline
    try:
        first = pool.call(spec, "before_turn", {})["pid"]
        # Noticed as an exit, not as the 15 s deadline passing (that would be a timeout's message).
        with pytest.raises(
            WorkerFailure,
            match=r"^hook failed on 'before_turn': worker \S+ \S+dies\.py exited with status 3 during the call$",
        ):
            pool.call(spec, "before_turn", {"die": True})
        grandchild = int((dirs["runtime"] / "grandchild.pid").read_text())
        assert wait_dead([grandchild], 5.0) == []  # evicted with its whole process group
        assert pool.call(spec, "before_turn", {})["pid"] != first  # a fresh worker, no replay
    finally:
        pool.close()


def test_workers_are_named_by_what_they_run():
    assert (
        worker_name(("/usr/bin/python3", "-m", "i_core", "--runtime", "worker", "prompts"))
        == "i --runtime worker prompts"
    )
    assert worker_name(("/venv/bin/python3.11", "/x/dies.py", "a")) == "dies.py"
    assert worker_name(("/venv/bin/python", "-m", "my_worker")) == "my_worker"
    assert worker_name(("/venv/bin/i-budget",)) == "i-budget"


# -- 7. a SIGKILLed core takes its workers (and their children) along -------------------------

_STUBBORN = """
    import json, os, signal, subprocess, sys, time
    from i_protocol import Worker

    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    mode = sys.argv[1]
    worker = Worker("stubborn", "0")

    def announce():
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(3600)"])
        path = os.path.join(os.environ["I_RUNTIME_DIR"], "pids")
        with open(path + ".tmp", "w") as handle:
            handle.write(f"{os.getpid()} {child.pid}")
        os.replace(path + ".tmp", path)

    @worker.hook("user_input")
    def user_input(data, request):
        announce()
        if mode == "busy":
            while True:        # mid-call, never reading stdin again
                time.sleep(1)
        return data

    from i_protocol.worker import protect_stdio

    worker.serve(*protect_stdio())
    if mode == "deaf":
        while True:            # end of input seen, and ignored
            time.sleep(1)
"""


@pytest.mark.parametrize("mode", ["busy", "deaf"])
def test_a_sigkilled_core_takes_its_workers_and_their_children_along(dirs, project, tmp_path, mode):
    stubborn = [*write_script(tmp_path, "stubborn.py", _STUBBORN), mode]
    manifest = tmp_path / "m.json"
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["user_input"], "exec": stubborn}]}))
    pids: list[int] = []
    # "deaf": the worker answered and waits; the core is mid-turn, waiting for the (delayed) model.
    with ScriptedModel([{"delay": 30, "text": "late"}]) as model:
        write_config(dirs, model.base_url)
        core = subprocess.Popen(
            [sys.executable, "-m", "i_core", "-C", str(project), "--manifest", str(manifest), "go"],
            env=env_of(dirs),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            pids = [int(p) for p in wait_for(dirs["runtime"] / "pids").split()]
            if mode == "deaf":
                stop = time.monotonic() + scaled(30)
                while not model.requests and time.monotonic() < stop:
                    time.sleep(0.02)
                assert model.requests, "the core never reached the model"
            assert all(alive(pid) for pid in pids)
            core.send_signal(signal.SIGKILL)
            core.wait(10)
            assert wait_dead(pids, 5.0) == []
        finally:
            core.kill()
            core.wait(10)
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
