"""Versions that name one build, every package installed: each console script checks the installed
i-protocol before anything else (one line, exit 7, never a traceback), answers ``--version`` with
its build, and the core's ``versions`` gives each module a verdict."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# console script -> (package folder, import name, distribution)
SCRIPTS = {
    "i": ("core", "i_core", "i-core"),
    "i-budget": ("worker-budget", "i_budget", "i-worker-budget"),
    "i-compact": ("worker-compact", "i_compact", "i-worker-compact"),
    "i-cache": ("worker-cache", "i_cache", "i-worker-cache"),
    "i-memory": ("worker-memory", "i_memory", "i-worker-memory"),
    "i-web": ("worker-web", "i_web", "i-worker-web"),
    "i-mcp": ("worker-mcp", "i_mcp", "i-worker-mcp"),
    "i-checkpoint": ("worker-checkpoint", "i_checkpoint", "i-worker-checkpoint"),
}


def about(folder: str, module: str) -> dict[str, str]:
    namespace: dict[str, str] = {}
    exec((ROOT / "packages" / folder / "src" / module / "__about__.py").read_text(), namespace)
    return namespace


def test_every_console_script_has_a_preflight_and_the_copies_are_the_same():
    copies = {
        folder: (ROOT / "packages" / folder / "src" / module / "preflight.py").read_bytes()
        for folder, module, _ in SCRIPTS.values()
    }
    assert len(set(copies.values())) == 1, "preflight.py differs between packages: copy one over the others"
    scripts = {
        name: target
        for folder, _, _ in SCRIPTS.values()
        for name, target in tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text())["project"][
            "scripts"
        ].items()
    }
    assert scripts == {name: f"{module}.__main__:run" for name, (_, module, _) in SCRIPTS.items()}


def test_every_worker_entry_is_the_check_then_worker_run():
    bodies = set()
    for name, (folder, module, dist) in SCRIPTS.items():
        if module == "i_core":
            continue
        text = (ROOT / "packages" / folder / "src" / module / "__main__.py").read_text()
        bodies.add(text.replace(dist, "DIST").replace(name, "PROGRAM"))
    [body] = bodies
    run = body[body.index("def run() -> NoReturn:") : body.index('if __name__ == "__main__"')]
    statements = [line for line in run.splitlines()[2:] if line.strip()]
    assert statements[0].strip() == "preflight.check(PROGRAM, DIST, __version__, NEEDS_PROTOCOL)"
    assert statements[1].strip().startswith("preflight.worker(") and ".run(" in statements[1]
    assert "def main" not in body


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_the_guard_needs_what_pyproject_needs(script):
    folder, module, _ = SCRIPTS[script]
    doc = tomllib.loads((ROOT / "packages" / folder / "pyproject.toml").read_text())
    needs = about(folder, module)["NEEDS_PROTOCOL"]
    assert f"i-protocol{needs}" in [d.replace(" ", "") for d in doc["project"]["dependencies"]]


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_a_too_old_i_protocol_stops_every_console_script_in_one_line(script, tmp_path):
    folder, module, dist = SCRIPTS[script]
    fake = tmp_path / "i_protocol"
    fake.mkdir()
    (fake / "__init__.py").write_text("")
    (fake / "__about__.py").write_text('__version__ = "0.2.1"\nPROTOCOL_VERSION = "1"\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for args in (["--version"], []):
        result = subprocess.run(
            [str(BIN / script), *args], capture_output=True, text=True, env=env, stdin=subprocess.DEVNULL, timeout=30
        )
        info = about(folder, module)
        assert result.returncode == 7, result.stderr
        assert result.stderr.splitlines() == [
            f"{script}: {dist} {info['__version__']} needs i-protocol{info['NEEDS_PROTOCOL']}, but i-protocol 0.2.1 "
            f"is installed; fix: {sys.executable} -m pip install 'i-protocol{info['NEEDS_PROTOCOL']}'"
        ]


def working_tree_src(folder: str) -> str:
    """The tree hash git would give packages/<folder>/src with the working tree's files."""
    index = Path(os.environ.get("TMPDIR", "/tmp")) / f"i-test-index-{os.getpid()}"
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    try:
        subprocess.run(["git", "read-tree", "--empty"], cwd=ROOT, env=env, check=True)
        subprocess.run(["git", "add", f"packages/{folder}/src"], cwd=ROOT, env=env, check=True)
        tree = subprocess.run(["git", "write-tree"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    finally:
        index.unlink(missing_ok=True)
    return subprocess.run(
        ["git", "rev-parse", f"{tree.stdout.strip()}:packages/{folder}/src"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_version_names_the_build_that_is_installed(script):
    folder, module, dist = SCRIPTS[script]
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    result = subprocess.run([str(BIN / script), "--version", "--json"], capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    info = about(folder, module)
    assert (doc["package"], doc["version"], doc["protocol"]) == (dist, info["__version__"], "1")
    assert doc["build"] == working_tree_src(folder)
    assert doc["library"]["build"] == working_tree_src("protocol")
    lines = subprocess.run([str(BIN / script), "--version"], capture_output=True, text=True, timeout=30).stdout
    assert lines.splitlines()[1].startswith(f"build {doc['build'][:12]}; i-protocol {doc['library']['version']} ")


def test_versions_gives_every_installed_worker_a_verdict(env, dirs):
    result = subprocess.run(
        [str(BIN / "i"), "--runtime", "versions", "--json"], capture_output=True, text=True, env=env, timeout=60
    )
    assert result.returncode == 0, result.stderr
    rows = {m["module"]: m for m in json.loads(result.stdout)["modules"]}
    for module in ("budget", "compact", "cache", "memory", "web"):
        assert rows[module]["verdict"] == "compatible", rows[module]
        assert rows[module]["handshake"] == "answered", rows[module]
        assert rows[module]["library"] and rows[module]["build"] and rows[module]["library_build"]
