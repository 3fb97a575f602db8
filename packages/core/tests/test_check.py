"""`i --runtime check`: the contract suite against real worker processes.

The official workers pass; a compactor that breaks one rule fails exactly the check that names
it, while the framing checks still pass (tests/workers/bad_compactor.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from i_core.check import checks_of, framing, resolve_target, run_checks
from i_core.check.framing import CHECKS as FRAMING
from i_core.check.probe import CheckFailed, Run
from i_core.check.suite import temporary_site
from i_core.executables import find_script
from i_protocol import CallError
from i_protocol.testing import scaled

HERE = Path(__file__).parent
BAD = [sys.executable, str(HERE / "workers" / "bad_compactor.py")]
CORE = [sys.executable, "-m", "i_core"]


def outcome(module: str, argv: list[str] | None = None) -> dict[str, tuple[bool, str]]:
    _, results = run_checks(module, exec_argv=argv)
    assert [r.name for r in results] == [name for name, _ in checks_of(module)]
    return {r.name: (r.passed, r.detail) for r in results}


def installed(script: str) -> pytest.MarkDecorator:
    """Skip where the worker is not installed (the core's own tox env has none of them)."""
    return pytest.mark.skipif(find_script(script) is None, reason=f"{script} is not installed")


@pytest.mark.parametrize(
    "module",
    [
        pytest.param("compact", marks=installed("i-compact")),
        pytest.param("budget", marks=installed("i-budget")),
        pytest.param("cache", marks=installed("i-cache")),
        pytest.param("memory", marks=installed("i-memory")),
        pytest.param("checkpoint", marks=installed("i-checkpoint")),
        pytest.param("web", marks=installed("i-web")),
        "approval",
        "prompts",
        "skills",
        "steering",
    ],
)
def test_every_shipped_worker_passes(dirs, module):
    failed = {name: detail for name, (passed, detail) in outcome(module).items() if not passed}
    assert failed == {}


@pytest.mark.parametrize(
    ("mode", "check", "reason"),
    [
        ("cut_in_batch", "compact_plan: cut null or valid, never inside a tool batch", "inside a tool batch"),
        ("drops_field", "compact_plan: unrelated fields kept", "dropped the field 'x_check_unrelated'"),
        ("banner", "stdout carries only frames", "logs belong on stderr"),
    ],
)
def test_a_broken_compactor_fails_the_check_that_names_it(dirs, mode, check, reason):
    results = outcome("compact", [*BAD, mode])
    passed, detail = results[check]
    assert not passed and reason in detail, detail
    if mode != "banner":  # a banner breaks every call; the others keep the wire contract
        assert all(results[name][0] for name, _ in FRAMING)


def test_an_approval_worker_with_naive_rules_fails_the_rules_check(dirs):
    results = outcome("approval", [sys.executable, str(HERE / "workers" / "naive_rules_approval.py")])
    passed, detail = results["approval rules: deny > ask > allow, part by part"]
    assert not passed and "cd .. && rm -rf project" in detail and "expected deny" in detail
    assert results["tool_approval: decision allow/ask/deny"][0]


def test_a_policy_of_its_own_passes_without_the_rules_but_a_project_file_never_allows(dirs, tmp_path):
    own = tmp_path / "own_policy.py"
    own.write_text(
        "import sys\nfrom i_protocol import Worker\nworker = Worker('p', '1')\n"
        "@worker.hook('tool_approval')\ndef h(data, request):\n    return data\n"
        "sys.exit(worker.main())\n"
    )
    results = outcome("approval", [sys.executable, str(own)])
    assert results["approval rules: deny > ask > allow, part by part"] == (
        True,
        'not checked: this policy does not read approval.json\'s rules (deny ["shell"] was not applied)',
    )
    assert results["approval rules: a project file never allows"][0]
    trusting = tmp_path / "trusting_policy.py"  # applies a project file's allow: the check fails it
    trusting.write_text(
        "import json, os, sys\nfrom i_protocol import Worker\nworker = Worker('p', '1')\n"
        "@worker.hook('tool_approval')\ndef h(data, request):\n"
        "    path = os.path.join(request.workspace, '.i', 'approval.json')\n"
        "    if os.path.exists(path) and data['name'] in json.load(open(path)).get('allow', []):\n"
        "        data['decision'] = 'allow'\n"
        "    return data\n"
        "sys.exit(worker.main())\n"
    )
    passed, detail = outcome("approval", [sys.executable, str(trusting)])["approval rules: a project file never allows"]
    assert not passed and "a project file's allow rule allowed" in detail


def test_a_worker_without_undo_fails_the_checkpoint_contract(dirs):
    results = outcome("checkpoint", [*CORE, "--runtime", "worker", "approval"])
    passed, detail = results["hello: turn_context and undo"]
    assert not passed and "does not declare turn_context, undo" in detail, detail
    assert not results["undo: round trip"][0]
    assert all(results[name][0] for name, _ in FRAMING)


@installed("i-compact")
def test_the_command_prints_a_table_and_exits_0_only_when_all_pass(dirs):
    good = subprocess.run([*CORE, "--runtime", "check", "compact"], capture_output=True, text=True, timeout=scaled(300))
    assert good.returncode == 0, good.stdout + good.stderr
    count = len(checks_of("compact"))
    assert "i-compact (installed" in good.stdout and f"{count} checks: {count} passed, 0 failed" in good.stdout
    assert good.stdout.count("  PASS  ") == count
    bad = subprocess.run(
        [*CORE, "--runtime", "check", "compact", "--json", "--exec", *BAD, "cut_in_batch"],
        capture_output=True,
        text=True,
        timeout=scaled(300),
    )
    assert bad.returncode == 6, bad.stderr
    report = json.loads(bad.stdout)
    assert report["passed"] is False and report["source"] == "--exec" and report["exec"][-1] == "cut_in_batch"
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    assert "compact_plan: cut null or valid, never inside a tool batch" in failed


REDUCTION = "context_budget: a real reduction stays a reduction"


def test_a_budget_that_counts_a_byte_per_token_fails_the_reduction_check(dirs):
    # Anchored on real usage (4 bytes per token), it estimates a history cut to 40% of the bytes
    # above the anchored count: every real compaction would fail not_reducing (seed 001 §7).
    passed, detail = outcome("budget", [sys.executable, str(HERE / "workers" / "byte_budget.py")])[REDUCTION]
    assert not passed
    assert "not below the" in detail and "would fail not_reducing" in detail, detail


@installed("i-budget")
def test_the_real_budget_passes_the_reduction_check(dirs):
    passed, detail = outcome("budget")[REDUCTION]
    assert passed, detail


def test_a_binding_is_what_gets_checked_by_default(dirs):
    (dirs["config"] / "bindings.json").write_bytes(orjson.dumps({"compact": {"exec": [*BAD, "drops_field"]}}))
    target, results = run_checks("compact")
    assert target.source == "bound" and target.argv[-1] == "drops_field"
    assert not next(r for r in results if r.name == "compact_plan: unrelated fields kept").passed


def test_unknown_module_and_bad_exec_are_one_line_errors(dirs, tmp_path):
    unknown = subprocess.run(
        [*CORE, "--runtime", "check", "compat"], capture_output=True, text=True, timeout=scaled(60)
    )
    assert unknown.returncode == 3 and "unknown module 'compat'; known modules: approval" in unknown.stderr
    missing = subprocess.run(
        [*CORE, "--runtime", "check", "compact", "--exec", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=scaled(60),
    )
    assert missing.returncode == 3 and "is not an executable file" in missing.stderr


def test_checks_never_touch_the_users_directories(dirs):
    run_checks("skills")
    run_checks("compact", exec_argv=[*BAD, "drops_field"])
    assert [p for key in ("config", "data", "cache", "runtime") for p in dirs[key].iterdir()] == []


def test_a_worker_that_does_not_flush_fails_with_the_reason(dirs, tmp_path):
    script = tmp_path / "slow.py"
    script.write_text(
        "import sys\n"
        "for line in sys.stdin:\n"
        "    sys.stdout.write(line.replace('\"event\"', '\"e\"', 1))\n"  # answers, but never flushes
    )
    with temporary_site() as site:
        target = resolve_target("prompts", [sys.executable, str(script)], None, Path(site.paths.config_dir))
        run = Run("prompts", target, site)
        for check in (framing.startup, framing.flushed_lines):
            with pytest.raises((CheckFailed, CallError)) as failure:
                check(run)
            assert "deadline" in str(failure.value) or "flush it at once" in str(failure.value)
