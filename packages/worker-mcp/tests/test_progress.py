"""Long tools: the server's progress notifications relayed as progress frames keep a call alive up to
the server's ``timeout``; a call that stops reporting ends ``idle_timeout`` after its last report."""

from __future__ import annotations

import time

import pytest

from i_protocol.testing import scaled


def _steps(count: int, every: float, stall: float = 0.0) -> dict:
    return {"name": "mcp__fixture__steps", "arguments": {"count": count, "every": every, "stall": stall}}


def test_a_tool_reporting_progress_outlives_the_idle_deadline(env):
    idle = scaled(1.0)
    env.write_config({"fixture": env.server(idle_timeout=idle, timeout=scaled(30))})
    worker = env.spawn()
    env.call(worker, "tools_list", {"tools": []})
    seen: list[dict] = []
    # Five reports half the idle deadline apart: 2.5 idle deadlines in all.
    answer = env.call(worker, "tool", _steps(5, idle / 2), progress=seen.append)
    assert answer == {"output": "5 steps"}
    assert [update["progress"] for update in seen] == [1, 2, 3, 4, 5]
    assert seen[0] == {"message": "step 1", "progress": 1, "total": 5}


def test_a_tool_that_stops_reporting_is_stopped_after_its_last_report(env):
    idle = scaled(0.8)
    env.write_config({"fixture": env.server(idle_timeout=idle, timeout=scaled(30))})
    worker = env.spawn()
    env.call(worker, "tools_list", {"tools": []})
    seen: list[dict] = []
    started = time.monotonic()
    answer = env.call(worker, "tool", _steps(2, idle / 2, stall=60), progress=seen.append)
    assert answer["is_error"] is True
    assert "neither answered the call of 'steps' nor reported progress" in answer["output"]
    assert len(seen) == 2 and time.monotonic() - started < scaled(10)
    assert worker.alive  # the worker answered in time (a tool error), before the core's deadline


def test_without_the_opt_in_a_call_ends_at_the_idle_deadline(env):
    idle = scaled(0.8)
    env.write_config({"fixture": env.server(idle_timeout=idle, timeout=scaled(30))})
    worker = env.spawn()
    env.call(worker, "tools_list", {"tools": []})
    answer = env.call(worker, "tool", _steps(4, idle / 2))
    assert answer["is_error"] is True and "did not answer the call of 'steps'" in answer["output"]


@pytest.mark.parametrize("megabytes", [20])
def test_a_result_over_the_limit_is_refused_as_too_large(env, megabytes):
    env.write_config({"fixture": env.server(timeout=scaled(14))})
    answer = env.call(env.spawn(), "tool", {"name": "mcp__fixture__big", "arguments": {"megabytes": megabytes}})
    assert answer["is_error"] is True
    assert "MB, over i-mcp's limit of 16 MB (too large; it was not read)" in answer["output"]
