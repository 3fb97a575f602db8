from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest

from i_core.errors import WorkerFailure
from i_core.hook_results import ToolResult
from i_core.hooks import HookRunner
from i_core.manifest import Exec, parse_manifest
from i_core.pool import WorkerPool, worker_environment
from i_protocol import paths_from_env
from i_protocol.testing import scaled, wait_dead


def spec(argv, cwd) -> Exec:
    return Exec(argv=tuple(argv), cwd=str(Path(cwd).resolve()))


@pytest.fixture
def pool(dirs):
    pool = WorkerPool(paths_from_env(), io_limit_bytes=8192, deadline=2.0)
    yield pool
    pool.close()


def test_one_persistent_worker_per_argv_and_cwd(pool, chain_exec, tmp_path):
    a = spec(chain_exec("a"), tmp_path)
    first = pool.call(a, "before_turn", {})
    second = pool.call(a, "before_turn", {})
    assert first["pid_a"] == second["pid_a"]
    other_cwd = tmp_path / "other"
    other_cwd.mkdir()
    third = pool.call(spec(chain_exec("a"), other_cwd), "before_turn", {})
    assert third["pid_a"] != first["pid_a"]
    assert len(pool.running()) == 2


def test_environment_is_cleared_to_the_allow_list(pool, chain_exec, tmp_path, monkeypatch, dirs):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    monkeypatch.setenv("I_APPROVAL_TOKEN", "tok")
    monkeypatch.setenv("MY_CUSTOM_CREDENTIAL", "x")
    monkeypatch.setenv("HOME", "/home/someone")
    fresh = WorkerPool(paths_from_env())
    try:
        data = fresh.call(spec(chain_exec("e"), tmp_path), "before_turn", {"want_env": True})
    finally:
        fresh.close()
    env = data["env_e"]
    assert "OPENAI_API_KEY" not in env and "I_APPROVAL_TOKEN" not in env and "MY_CUSTOM_CREDENTIAL" not in env
    assert env["PYTHONUTF8"] == "1" and env["HOME"] == "/home/someone"
    assert env["I_DATA_DIR"] == str(dirs["data"]) and env["I_CONFIG_DIR"] == str(dirs["config"])
    assert (
        set(env)
        - {
            "PATH",
            "HOME",
            "TEMP",
            "TMP",
            "PYTHONUTF8",
            "I_CONFIG_DIR",
            "I_DATA_DIR",
            "I_CACHE_DIR",
            "I_RUNTIME_DIR",
            "LC_CTYPE",
        }
        == set()
    )
    assert data["cwd_e"] == str(tmp_path.resolve())


def test_worker_environment_function_drops_everything_else():
    paths = paths_from_env({"I_CONFIG_DIR": "/c", "I_DATA_DIR": "/d", "I_CACHE_DIR": "/k", "I_RUNTIME_DIR": "/r"})
    env = worker_environment(paths, {"PATH": "/bin", "ANTHROPIC_API_KEY": "x", "TMP": "/tmp", "SystemRoot": "C:\\W"})
    assert env == {
        "PATH": "/bin",
        "TMP": "/tmp",
        "SystemRoot": "C:\\W",
        "PYTHONUTF8": "1",
        "I_CONFIG_DIR": "/c",
        "I_DATA_DIR": "/d",
        "I_CACHE_DIR": "/k",
        "I_RUNTIME_DIR": "/r",
    }


@pytest.mark.parametrize(
    "mode, message",
    [
        ("hang", "did not answer within the deadline"),
        ("exit_mid", "closed its output mid-frame (exit status 7"),
        ("banner", "sent an unreadable response: not a JSON frame: 'FaultyWorker 1.0 ready'"),
        ("wrong_id", "answered id 2 to request id 1"),
        ("list_data", "with list data, expected an object"),
        ("huge", "over the 50331648-byte limit"),
    ],
)
def test_faulty_worker_fails_the_call_is_evicted_and_replaced(pool, faulty_exec, chain_exec, tmp_path, mode, message):
    healthy = spec(chain_exec("ok"), tmp_path)
    healthy_pid = pool.call(healthy, "before_turn", {})["pid_ok"]
    faulty = spec(faulty_exec(mode), tmp_path)
    pool.deadline = 2.0 if mode == "hang" else 30.0
    with pytest.raises(WorkerFailure) as info:
        pool.call(faulty, "before_turn", {"n": 1})
    assert message in str(info.value)
    # Evicted with its process group: no process of it is left.
    evicted = [w for w in pool.running() if w.process.args[2] == mode]
    assert evicted == []
    # Nothing else is harmed: the healthy worker is the same process.
    assert pool.call(healthy, "before_turn", {})["pid_ok"] == healthy_pid
    # The next call starts a fresh worker (which answers correctly) — no replay of the failed call.
    again = pool.call(faulty, "before_turn", {"n": 2})
    assert again["n"] == 2


def test_evicted_worker_process_group_is_killed(pool, faulty_exec, tmp_path):
    faulty = spec(faulty_exec("hang"), tmp_path)
    pool.deadline = 1.0
    pool.start([faulty])
    pid = pool.running()[0].pid
    with pytest.raises(WorkerFailure):
        pool.call(faulty, "before_turn", {})
    assert wait_dead([pid], 5.0) == []
    with pytest.raises(ProcessLookupError):
        os.killpg(pid, 0)


def test_stderr_flood_is_bounded_and_does_not_block(pool, faulty_exec, tmp_path):
    faulty = spec(faulty_exec("stderr_flood"), tmp_path)
    pool.deadline = 30.0
    assert pool.call(faulty, "before_turn", {"x": 1})["x"] == 1
    worker = pool.running()[0]
    deadline = time.time() + scaled(10)
    while worker.stderr.total < 200 * 65536 and time.time() < deadline:
        time.sleep(0.05)
    assert worker.stderr.total == 200 * 65536
    assert len(worker.stderr.text()) <= 8192  # io_limit_bytes of the pool


def test_hook_chain_passes_full_data_in_manifest_order(pool, chain_exec, tmp_path):
    manifest = parse_manifest(
        {
            "hooks": [
                {"events": ["before_turn"], "exec": chain_exec("first")},
                {"events": ["finish"], "exec": chain_exec("never")},
                {"events": ["*"], "exec": chain_exec("second")},
            ]
        },
        tmp_path,
        "m.json",
    )
    runner = HookRunner(manifest, pool, {"workspace": str(tmp_path)})
    data = runner.run("before_turn", {"keep": 1, "want_env": True})
    assert data["trail"] == ["first", "second"] and data["keep"] == 1
    assert data["context_first"]["workspace"] == str(tmp_path)
    assert runner.run("user_input", {"content": "x"}) == {
        "content": "x",
        "trail": ["second"],
        "pid_second": data["pid_second"],
    }


def test_event_without_subscribers_costs_nothing(pool, tmp_path):
    manifest = parse_manifest({"hooks": []}, tmp_path, "m.json")
    runner = HookRunner(manifest, pool, {})
    data = {"x": 1}
    assert runner.run("before_save", data) is data
    assert pool.running() == []


def test_external_tool_dispatch(pool, chain_exec, tmp_path):
    manifest = parse_manifest(
        {"tools": [{"name": "shout", "description": "", "parameters": {"type": "object"}, "exec": chain_exec("t")}]},
        tmp_path,
        "m.json",
    )
    runner = HookRunner(manifest, pool, {})
    assert runner.tool("shout", {"text": "hi"}) == ToolResult("HI!", [])
    with pytest.raises(WorkerFailure, match="unknown tool 'nope'"):
        runner.tool("nope", {})


def test_workers_start_concurrently(pool, chain_exec, tmp_path):
    specs = [spec(chain_exec(str(i)), tmp_path) for i in range(4)]
    pool.start(specs)
    assert len(pool.running()) == 4  # all spawned before any call was made
    assert [pool.call(s, "before_turn", {})["trail"] for s in specs] == [["0"], ["1"], ["2"], ["3"]]


def test_close_terminates_every_worker(dirs, chain_exec, tmp_path):
    pool = WorkerPool(paths_from_env())
    pool.call(spec(chain_exec("x"), tmp_path), "before_turn", {})
    pid = pool.running()[0].pid
    pool.close()
    assert wait_dead([pid], 5.0) == []
    with pytest.raises(WorkerFailure, match="closed"):
        pool.call(spec(chain_exec("x"), tmp_path), "before_turn", {})


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_and_sigterm_clean_up_the_pool(dirs, chain_exec, tmp_path, project, sig):
    manifest = tmp_path / "m.json"
    manifest.write_bytes(orjson.dumps({"hooks": [{"events": ["before_turn"], "exec": chain_exec("slow")}]}))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "i_core",
            "--runtime",
            "hook",
            "before_turn",
            "-C",
            str(project),
            "--manifest",
            str(manifest),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.stdin.write(orjson.dumps({"sleep": 30, "want_env": False}))
    proc.stdin.close()
    # Wait until the worker is running (its process is a child in its own session).
    worker_pid = None
    for _ in range(200):
        out = subprocess.run(["pgrep", "-f", "chain_worker.py slow"], capture_output=True, text=True).stdout.split()
        if out:
            worker_pid = int(out[0])
            break
        time.sleep(0.05)
    assert worker_pid is not None
    time.sleep(0.5)
    proc.send_signal(sig)
    proc.wait(timeout=scaled(20))
    assert proc.returncode != 0
    assert wait_dead([worker_pid], 5.0) == []
