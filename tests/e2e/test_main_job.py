"""The README's main job (scripts/main_job.py) as a new user runs it: what it prints is words."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from i_protocol.testing import scaled

MAIN_JOB = Path(__file__).resolve().parents[2] / "scripts" / "main_job.py"


def _main_job():
    spec = importlib.util.spec_from_file_location("main_job", MAIN_JOB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_main_job_reports_in_words_not_raw_dicts(env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, str(MAIN_JOB)],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=scaled(180),
    )
    assert done.returncode == 0, done.stderr
    assert "{'" not in done.stdout and "NOT met" not in done.stdout
    assert "usage anchor: " in done.stdout and " input tokens and " in done.stdout
    assert "cache: 2 requests in this project, " in done.stdout  # the task's two model requests


def test_one_request_is_nothing_to_compare_yet() -> None:
    words = _main_job().cache_words
    report = {"requests": 1, "observed_token_hit_ratio": 0.0, "target_hit_ratio": 0.99, "target_met": False}
    assert words(report) == "cache: 1 request, nothing to compare yet (a first request has nothing cached to read)"
    assert words({**report, "requests": 0}) == "cache: no request observed yet"
    two = {**report, "requests": 2, "observed_token_hit_ratio": 0.5}
    assert (
        words(two) == "cache: 2 requests in this project, 50% of input tokens read from the cache (target 99%: not met)"
    )
