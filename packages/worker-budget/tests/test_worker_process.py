"""End to end: the installed ``i-budget`` console script spoken to over NDJSON."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from i_protocol import ErrorFrame
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled

WORKSPACE_ID = "f29127b0-f512-4c6e-9e31-87d476d168ce"


@pytest.fixture
def proc(exe: str, dirs: dict[str, str], tmp_path: Path):
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    env.update({f"I_{key.split('_')[0].upper()}_DIR": value for key, value in dirs.items()})
    worker = WorkerProcess.spawn([exe], env=env, cwd=str(tmp_path))
    yield worker
    worker.close()


def call(worker: WorkerProcess, dirs: dict[str, str], data: dict[str, Any], **context: Any) -> dict[str, Any]:
    return worker.call("context_budget", data, context={"paths": dirs, **context}, timeout=scaled(15))


def test_version_names_distribution_and_protocol(exe: str):
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("i-worker-budget ") and "i-protocol" in out


def test_version_json_comes_through_worker_run(exe: str):
    out = subprocess.run([exe, "--version", "--json"], capture_output=True, text=True, check=True).stdout
    doc = orjson.loads(out)
    assert doc["package"] == "i-worker-budget" and doc["library"]["package"] == "i-protocol"


def test_an_i_protocol_build_whose_worker_cannot_run_ends_in_one_line(exe: str, tmp_path: Path):
    import shutil

    import i_protocol

    fake = tmp_path / "i_protocol"
    shutil.copytree(Path(i_protocol.__file__).parent, fake, ignore=shutil.ignore_patterns("__pycache__"))
    worker_py = fake / "worker.py"
    worker_py.write_text(worker_py.read_text().replace("    def run(self", "    def _not_run(self"))
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(tmp_path)}
    result = subprocess.run([exe], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=30)
    assert result.returncode == 7
    [line] = result.stderr.splitlines()
    assert "another build (cannot import name 'Worker.run' from 'i_protocol')" in line


def test_context_budget_round_trip_keeps_input(proc, dirs, build):
    data = build(extra={"from": "another hook"})
    out = call(proc, dirs, data)
    for key, value in data.items():
        assert out[key] == value
    result = out["budget_result"]
    assert result["fits"] is True and result["estimate_method"] == "utf8_bytes"
    assert result["density"]["rule"] == "per_class" and result["density"]["observed"] == []
    assert "no workspace state" in result["density"]["detail"]


def test_anchor_round_trip_through_the_process(proc, dirs, build, history_of):
    history = history_of()
    first = call(proc, dirs, build(history=history))["budget_result"]
    usage = {**first["anchor"], "input_tokens": 400, "output_tokens": 30}
    grown = [*history, {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]
    second = call(proc, dirs, build(history=grown, usage=usage))["budget_result"]
    assert second["estimate_method"] == "usage_anchor"
    assert second["estimate"] < first["estimate"]


@pytest.mark.parametrize(
    ("patch", "fragment"),
    [
        ({"budget": {"context_window": 1000, "tokenizer": "cl100k_base"}}, "cl100k_base"),
        ({"history": "oops"}, "history must be a list"),
        ({"budget": {"context_window": 100_000, "safety_ratio": 0.7}}, "safety_ratio"),
        ({"history": [{"role": "system", "content": "s"}, {"role": "wizard", "content": "x"}]}, "'wizard' is unknown"),
    ],
)
def test_bad_input_is_an_error_frame(proc, dirs, build, patch, fragment):
    with pytest.raises(ErrorFrame, match=fragment):
        call(proc, dirs, {**build(), **patch})


def test_the_serve_loop_survives_bad_requests(exe: str, dirs, build, tmp_path):
    good = build()
    frames = [
        {"id": 1, "event": "context_budget", "paths": dirs, "data": {**good, "history": 42}},
        {"id": 2, "event": "context_budget", "paths": dirs, "data": {**good, "budget": {"context_window": -1}}},
        {"id": 3, "event": "context_budget", "paths": dirs, "data": good},
    ]
    stdin = b"".join(orjson.dumps(frame) + b"\n" for frame in frames)
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
    done = subprocess.run(
        [exe], input=stdin, capture_output=True, env=env, cwd=tmp_path, timeout=scaled(30), check=True
    )
    replies = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, 2, 3]
    assert "history must be a list" in replies[0]["error"]
    assert "context_window" in replies[1]["error"]
    assert replies[2]["data"]["budget_result"]["fits"] is True


def test_unhandled_event_comes_back_unchanged(proc, dirs):
    assert proc.call("before_turn", {"messages": [1, 2]}, context={"paths": dirs}) == {"messages": [1, 2]}


def big_turn(index: int) -> list[dict[str, Any]]:
    words = " ".join(f"word{n % 97}" for n in range(index * 50, index * 50 + 600))
    return [{"role": "user", "content": words}, {"role": "assistant", "content": "ok " + words}]


def test_density_learns_in_the_workspace_state_dir(proc, dirs, build):
    budget = {"context_window": 1_000_000}
    history = [{"role": "system", "content": "system prompt"}]
    usage = None
    results = []
    for turn in range(5):
        history = [*history, *big_turn(turn)]
        out = call(proc, dirs, build(history=history, budget=budget, usage=usage, tools=[]), workspace_id=WORKSPACE_ID)[
            "budget_result"
        ]
        results.append(out)
        # Pretend the server counted 1 token per 4 bytes of this request.
        usage = {**out["anchor"], "input_tokens": max(1, out["comparable_estimate"] // 4), "output_tokens": 10}
    state = Path(dirs["data_dir"]) / "workspaces" / WORKSPACE_ID / "budget" / "density.json"
    stored = orjson.loads(state.read_bytes())
    entry = stored["entries"][" test-model"]  # no origin: the key is "<origin> <model>" with an empty origin
    # "word12 word13 ...": the runs hold digits, so this text is the id class; 1 whole request + 3 increments.
    assert len(entry["scales"]["id"]) == 4 and entry["scales"]["other"] == []
    assert results[0]["density"]["observed"] == []
    assert results[1]["density"]["observed"] == ["request: recorded"]
    assert results[-1]["density"]["observed"] == ["increment: recorded"]
    # An unanchored request now uses the learned densities, not 1 byte per token.
    fresh = call(proc, dirs, build(history=history, budget=budget, tools=[]), workspace_id=WORKSPACE_ID)[
        "budget_result"
    ]
    assert fresh["estimate_method"] == "density"
    assert fresh["fallback_reason"] == "no_usage"
    # 4 observed; the margin, and the spaces (word class, never a significant share here, so still at
    # 1 token a byte although their tokens are inside the id scale already), bring it to ~2.5.
    assert 2.2 < fresh["bytes_per_token"] < 4.0
    assert fresh["comparable_estimate"] / 4 <= fresh["estimate"] < fresh["comparable_estimate"] / 2
    # The comparable estimate stays the plain content measure whatever the estimator.
    assert fresh["comparable_estimate"] == results[-1]["comparable_estimate"]


def test_density_without_workspace_is_kept_in_the_process(proc, dirs, build):
    out = call(proc, dirs, build(budget={"context_window": 100_000}))["budget_result"]
    assert out["estimate_method"] == "utf8_bytes"
    assert "no workspace state" in out["density"]["detail"]
    assert not (Path(dirs["data_dir"]) / "workspaces").exists()


def _check_config(exe: str, config_dir: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "I_CONFIG_DIR": config_dir}
    return subprocess.run([exe, "--check-config"], env=env, capture_output=True, text=True, timeout=scaled(30))


def test_check_config_reads_the_budget_of_config_json(exe: str, dirs: dict[str, str]) -> None:
    path = Path(dirs["config_dir"]) / "config.json"
    result = _check_config(exe, dirs["config_dir"])
    assert (result.returncode, result.stdout) == (0, f"config ok: {path} absent (the core reports it)\n")
    # No max_tokens: the core sends its own default, so the reserve is not judged here.
    path.write_bytes(orjson.dumps({"base_url": "http://h/v1", "model": "m", "budget": {"context_window": 8000}}))
    assert _check_config(exe, dirs["config_dir"]).stdout == f"config ok: {path}\n"
    path.write_bytes(orjson.dumps({"model": "m", "budget": {"context_window": 8000, "safety_ratio": 2}}))
    result = _check_config(exe, dirs["config_dir"])
    assert result.returncode == 3
    assert result.stdout.startswith(f"config invalid: {path}: budget.safety_ratio must be")
