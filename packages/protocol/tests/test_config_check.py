"""``Worker.config_check``: a worker's config is checked at its first request (failing that call with
an error frame of kind ``config`` naming the file and the field) and by ``PROGRAM --check-config``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from i_protocol import Paths, Worker, WorkerConfig, WorkerError
from i_protocol.settings import optional_choice, reject_unknown


def _worker(*, at_request: bool = True) -> tuple[Worker, list[str]]:
    worker = Worker("demo", "1.0", dist_name="i-worker-demo")
    checked: list[str] = []

    @worker.config_check(at_request=at_request)
    def check(config: WorkerConfig, paths: Paths) -> None:
        checked.append(config.path or "")
        file = config.path or "demo.json"
        reject_unknown(config.data, ("mode",), file=file)
        optional_choice(config.data, "mode", ("fast", "slow"), "fast", file=file)
        if config.data.get("mode") == "slow":
            raise WorkerError(f"{file}: mode slow needs a package of its own")

    @worker.hook("before_turn")
    def before_turn(data: dict[str, Any], request: Any) -> dict[str, Any]:
        return {**data, "seen": True}

    @worker.tool("demo_tool")
    def demo_tool(arguments: dict[str, Any], request: Any) -> str:
        return "done"

    return worker, checked


def _frame(config_dir: Path, event: str = "before_turn", data: dict[str, Any] | None = None) -> dict[str, Any]:
    paths = {key: str(config_dir.parent / key) for key in ("config_dir", "data_dir", "cache_dir", "runtime_dir")}
    paths["config_dir"] = str(config_dir)
    return {"id": 3, "event": event, "data": data if data is not None else {}, "paths": paths}


@pytest.fixture
def config_dir(tmp_path: Path) -> Path:
    path = tmp_path / "config_dir"
    path.mkdir()
    return path


def test_a_typo_fails_the_first_request_with_kind_config(config_dir: Path) -> None:
    (config_dir / "demo.json").write_text(json.dumps({"mode": "fsat"}))
    worker, _ = _worker()
    answer = worker.handle(_frame(config_dir))
    assert answer == {
        "id": 3,
        "error": f'{config_dir}/demo.json: mode must be one of fast, slow, got "fsat"',
        "kind": "config",
    }
    tool = worker.handle(_frame(config_dir, "tool", {"name": "demo_tool", "arguments": {}}))
    assert tool["kind"] == "config" and "mode" in tool["error"]


def test_a_package_error_of_the_check_is_a_config_error_too(config_dir: Path) -> None:
    (config_dir / "demo.json").write_text(json.dumps({"mode": "slow"}))
    answer = _worker()[0].handle(_frame(config_dir))
    assert answer["kind"] == "config" and answer["error"].endswith("demo.json: mode slow needs a package of its own")


def test_a_valid_config_is_checked_once_until_the_file_changes(config_dir: Path) -> None:
    path = config_dir / "demo.json"
    path.write_text(json.dumps({"mode": "fast"}))
    worker, checked = _worker()
    for _ in range(3):
        assert worker.handle(_frame(config_dir))["data"] == {"seen": True}
    assert checked == [str(path)]
    path.write_text(json.dumps({"mode": "fast", "extra": 1}))
    assert "unknown field(s) extra" in worker.handle(_frame(config_dir))["error"]


def test_unhandled_events_and_hello_are_not_checked(config_dir: Path) -> None:
    (config_dir / "demo.json").write_text(json.dumps({"mode": "fsat"}))
    worker, checked = _worker()
    assert worker.handle(_frame(config_dir, "after_save", {"x": 1}))["data"] == {"x": 1}
    hello = worker.handle({"id": 1, "event": "hello", "data": {}})["data"]
    assert "config_kind" in hello["extensions"]
    assert checked == []


def test_at_request_false_leaves_requests_alone(config_dir: Path) -> None:
    (config_dir / "demo.json").write_text(json.dumps({"mode": "fsat"}))
    worker, checked = _worker(at_request=False)
    assert worker.handle(_frame(config_dir))["data"] == {"seen": True}
    assert checked == []
    assert "config_kind" not in worker.handle({"id": 1, "event": "hello", "data": {}})["data"]["extensions"]


def test_check_config_mode(
    config_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("I_CONFIG_DIR", str(config_dir))
    worker, _ = _worker()
    assert worker.main(["--check-config"]) == 0
    assert capsys.readouterr().out == f"config ok: {config_dir}/demo.json absent (defaults)\n"
    (config_dir / "demo.json").write_text(json.dumps({"mode": "fsat"}))
    assert worker.main(["--check-config"]) == 3
    assert (
        capsys.readouterr().out
        == f'config invalid: {config_dir}/demo.json: mode must be one of fast, slow, got "fsat"\n'
    )
    other = config_dir / "other.json"
    other.write_text("{}")
    assert worker.main(["--check-config", "--config", str(other)]) == 0
    assert capsys.readouterr().out == f"config ok: {other}\n"
    assert worker.main(["--check-config", "--config", str(config_dir / "none.json")]) == 3
    assert "file does not exist" in capsys.readouterr().out


def test_a_worker_without_a_check_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    worker = Worker("plain", "1.0")
    assert worker.main(["--check-config"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "no config check" in captured.err
    hello = worker.handle({"id": 1, "event": "hello", "data": {}})["data"]
    assert "config_kind" not in hello["extensions"]


def test_one_check_per_worker() -> None:
    worker, _ = _worker()
    with pytest.raises(ValueError, match="already has a config check"):
        worker.config_check()(lambda config, paths: None)
