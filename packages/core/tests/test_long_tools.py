"""What the core does with SPEC §3.4's progress frames, ``problems`` and error frames of kind config,
against a real worker process that declares them."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from i_core.errors import ConfigError, WorkerFailure
from i_core.handshake import Handshakes
from i_core.hooks import HookRunner, problem_lines
from i_core.manifest import parse_manifest
from i_core.pool import WorkerPool
from i_protocol import paths_from_env
from i_protocol.testing import scaled

WORKER = Path(__file__).parent / "workers" / "long_tool_worker.py"


@pytest.fixture
def runner(dirs, tmp_path):
    pool = WorkerPool(paths_from_env(), deadline=scaled(0.8), handshakes=Handshakes())
    manifest = {
        "tools": [
            {"name": name, "description": name, "parameters": {"type": "object"}, "exec": [sys.executable, str(WORKER)]}
            for name in ("slow", "misconfigured")
        ],
        "hooks": [{"events": ["tools_list"], "exec": [sys.executable, str(WORKER)]}],
    }
    runner = HookRunner(parse_manifest(manifest, tmp_path, "manifest.json"), pool, {"workspace": str(tmp_path)})
    yield runner
    pool.close()


def test_progress_frames_keep_a_tool_call_alive_past_the_deadline_and_reach_the_console(runner):
    shown: list[str] = []
    runner.progress = shown.append
    # Four reports 0.3 s apart (scaled): longer in all than the 0.8 s deadline each of them restarts.
    result = runner.tool("slow", {"count": 4, "every": scaled(0.3)})
    assert result.output == "4 steps"
    assert shown[0] == "slow: step 1\x1b[2J (1/4)"  # raw here: the console's progress line sanitises it
    assert len(shown) == 4


def test_without_a_progress_display_the_deadline_holds(runner):
    with pytest.raises(WorkerFailure, match="deadline"):
        runner.tool("slow", {"count": 4, "every": scaled(0.3)})


def test_a_config_error_frame_is_a_configuration_error_with_the_workers_own_message(runner):
    with pytest.raises(ConfigError) as caught:
        runner.tool("misconfigured", {})
    assert str(caught.value) == "/etc/long.json: field depth must be a number"
    assert caught.value.exit_code == 3


def test_tools_list_problems_are_collected_once_as_lines(runner):
    assert runner.announced_tools() == ()
    assert runner.problems == ["server 'broken' exited; its stderr ends: no dir"]


def test_problem_lines_are_bounded_and_skip_malformed_entries():
    answer = {"problems": [{"server": 3}, "x", {"server": "s", "reason": "starting"}, *[{"server": "n"}] * 60]}
    lines = problem_lines(answer, "mcp")
    assert lines[0] == "mcp: server 's': starting"
    assert len(lines) == 48 and lines[1] == "mcp: server 'n': unavailable"  # 50 read, two malformed
