"""`i --runtime check` without a module, and the config lines of `i --runtime versions`: every
selected module's config checked without a session (`PROGRAM --check-config`), a program that does
not support it reported as "not checked", never as an error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import orjson

from i_protocol.testing import scaled

CORE = [sys.executable, "-m", "i_core"]

# A third party's compactor built on i_protocol.Worker, with a config check of its own.
OURS_STYLE = """#!{python}
from i_protocol import Worker
from i_protocol.settings import optional_choice, reject_unknown

worker = Worker("compact", "1.0.0", dist_name="house-compactor")


@worker.config_check()
def check(config, paths):
    file = config.path or "compact.json"
    reject_unknown(config.data, ("mode",), file=file)
    optional_choice(config.data, "mode", ("model", "local"), "model", file=file)


@worker.hook("compact_plan")
def plan(data, request):
    return {{**data, "cut": None, "reason": "declined"}}


raise SystemExit(worker.main())
"""

# A program that ignores its arguments and serves until stdin ends (exit 0, nothing said).
IGNORES_ARGUMENTS = "#!{python}\nimport sys\nsys.stdin.read()\n"


def _script(path: Path, text: str) -> str:
    path.write_text(text.format(python=sys.executable))
    path.chmod(0o755)
    return str(path)


def _setup(dirs: dict[str, Path], tmp_path: Path, compactor: str, compact_json: dict[str, object]) -> None:
    config = dirs["config"]
    (config / "config.json").write_bytes(
        orjson.dumps({"base_url": "http://127.0.0.1:9/v1", "model": "m", "budget": {"context_window": 8000}})
    )
    (config / "plugins.json").write_bytes(orjson.dumps({"profile": "compact", "disabled": ["budget"]}))
    (config / "bindings.json").write_bytes(orjson.dumps({"compact": {"exec": [compactor]}}))
    (config / "compact.json").write_bytes(orjson.dumps(compact_json))


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CORE, "--runtime", *args], capture_output=True, text=True, timeout=scaled(60))


def test_check_names_the_file_and_the_field_of_a_typo(dirs, tmp_path):
    _setup(dirs, tmp_path, _script(tmp_path / "house", OURS_STYLE), {"mode": "lcoal"})
    result = _run("check")
    assert result.returncode == 3, result.stderr
    compact = [line for line in result.stdout.splitlines() if line.startswith("config compact:")]
    assert len(compact) == 1
    assert "invalid" in compact[0] and "compact.json" in compact[0] and "mode" in compact[0]
    assert '"lcoal"' in compact[0]
    assert any(line.startswith("config core: ok") for line in result.stdout.splitlines())


def test_check_passes_a_valid_config(dirs, tmp_path):
    _setup(dirs, tmp_path, _script(tmp_path / "house", OURS_STYLE), {"mode": "local"})
    result = _run("check", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    checks = {c["module"]: c for c in json.loads(result.stdout)["checks"]}
    assert checks["compact"]["status"] == "ok"
    assert checks["compact"]["detail"].endswith("compact.json")
    assert checks["steering"]["status"] == "not checked"  # bundled in the core


def test_a_program_without_the_check_is_not_checked_never_an_error(dirs, tmp_path):
    _setup(dirs, tmp_path, _script(tmp_path / "other", IGNORES_ARGUMENTS), {"mode": "lcoal"})
    result = _run("check", "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    compact = {c["module"]: c for c in json.loads(result.stdout)["checks"]}["compact"]
    assert compact["status"] == "not checked"
    assert "--check-config" in compact["detail"]


def test_versions_says_the_config_of_each_selected_module(dirs, tmp_path):
    _setup(dirs, tmp_path, _script(tmp_path / "house", OURS_STYLE), {"mode": "lcoal"})
    result = _run("versions", "--json")
    rows = {r["module"]: r for r in json.loads(result.stdout)["modules"]}
    assert rows["compact"]["config"] == "invalid"
    assert "compact.json" in rows["compact"]["config_detail"] and "mode" in rows["compact"]["config_detail"]
    assert rows["web"]["config"] is None  # not selected: not checked at all
    assert result.returncode == 3
    text = _run("versions")
    assert any(line.startswith("config compact: invalid") and "mode" in line for line in text.stdout.splitlines()), (
        text.stdout
    )


def test_check_without_a_module_refuses_exec(dirs):
    result = _run("check", "--exec", "/bin/true")
    assert result.returncode == 3
    assert "need the MODULE" in result.stderr
