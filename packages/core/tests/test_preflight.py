"""The console script's first step (``i_core.preflight``): a missing, too old or other build of
i-protocol ends `i` with one line naming the installed and the needed versions, exit 7; and
``--version``'s two lines and ``--version --json``."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from i_core import errors, preflight
from i_core.__about__ import NEEDS_PROTOCOL, __version__
from i_protocol import PROTOCOL_VERSION
from i_protocol import __version__ as LIBRARY

PACKAGE = Path(__file__).resolve().parents[1]
# `python -m i_core` runs the console script's `run` (the same as the `i` entry point).
CORE = [sys.executable, "-m", "i_core"]


def fake_protocol(root: Path, about: str | None, init: str = "") -> Path:
    """A folder to put ahead of site-packages holding an i_protocol package with this __about__."""
    package = root / "i_protocol"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(init)
    if about is not None:
        (package / "__about__.py").write_text(about)
    return root


def run_core(args: list[str], path: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = None
    if path is not None:
        import os

        env = {**os.environ, "PYTHONPATH": str(path)}
    return subprocess.run([*CORE, *args], capture_output=True, text=True, timeout=60, env=env)


def test_the_needed_range_is_pyproject_s():
    doc = tomllib.loads((PACKAGE / "pyproject.toml").read_text())
    assert f"i-protocol{NEEDS_PROTOCOL}" in [d.replace(" ", "") for d in doc["project"]["dependencies"]]
    assert preflight.fits(LIBRARY, NEEDS_PROTOCOL)


def test_the_exit_code_is_the_documented_one():
    assert preflight.EXIT_PROTOCOL == errors.EXIT_PROTOCOL == 7


@pytest.mark.parametrize(
    ("version", "needs", "ok"),
    [
        ("0.2.2", ">=0.2.2,<0.3", True),
        ("0.2.10", ">=0.2.2,<0.3", True),
        ("0.2.1", ">=0.2.2,<0.3", False),
        ("0.3.0", ">=0.2.2,<0.3", False),
        ("0.2", ">=0.2,<0.3", True),
        ("1.0.0rc1", ">=1.0", True),
        ("0.2.2", "~=0.2", False),  # a clause we do not understand never fits
    ],
)
def test_fits(version, needs, ok):
    assert preflight.fits(version, needs) is ok


def test_a_too_old_i_protocol_ends_in_one_line(tmp_path):
    path = fake_protocol(tmp_path, '__version__ = "0.2.1"\nPROTOCOL_VERSION = "1"\n')
    for args in (["hello"], ["--version"], ["--runtime", "worker", "approval"]):
        result = run_core(args, path)
        assert result.returncode == 7, result.stderr
        assert result.stdout == ""
        assert result.stderr.splitlines() == [
            f"i: i-core {__version__} needs i-protocol{NEEDS_PROTOCOL}, but i-protocol 0.2.1 is installed; "
            f"fix: {sys.executable} -m pip install 'i-protocol{NEEDS_PROTOCOL}'"
        ]


def test_another_build_of_a_fitting_version_ends_in_one_line(tmp_path):
    # i-protocol 0.2.2 as built at c4acfe7: the version fits, exit_fast is missing.
    path = fake_protocol(tmp_path, f'__version__ = "{LIBRARY}"\nPROTOCOL_VERSION = "1"\n')
    result = run_core(["hello"], path)
    assert result.returncode == 7
    [line] = result.stderr.splitlines()
    assert line.startswith(f"i: i-core {__version__} needs i-protocol{NEEDS_PROTOCOL} as released, but the installed")
    assert "another build (cannot import name 'exit_fast' from 'i_protocol')" in line
    assert "Traceback" not in result.stderr


def test_an_i_protocol_without_about_or_unimportable_ends_in_one_line(tmp_path):
    path = fake_protocol(tmp_path / "a", None)
    result = run_core(["hello"], path)
    assert result.returncode == 7 and len(result.stderr.splitlines()) == 1
    assert f"needs i-protocol{NEEDS_PROTOCOL}" in result.stderr
    broken = fake_protocol(tmp_path / "b", None, init="raise ImportError('broken')\n")
    result = run_core(["--version"], broken)
    assert result.returncode == 7 and len(result.stderr.splitlines()) == 1
    assert "Traceback" not in result.stderr


def test_version_prints_the_parsed_line_then_the_builds():
    result = run_core(["--version"])
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.splitlines()
    assert first == f"i-core {__version__} (i-protocol {PROTOCOL_VERSION})"
    build = preflight.source_tree(str(Path(preflight.__file__).parent))
    library = preflight.source_tree(str(Path(sys.modules["i_protocol"].__file__ or "").parent))
    assert build and library
    assert second == (
        f"build {build[:12]}; i-protocol {LIBRARY} build {library[:12]}; needs i-protocol{NEEDS_PROTOCOL}"
    )


def test_version_json():
    result = run_core(["--version", "--json"])
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["package"] == "i-core" and doc["version"] == __version__ and doc["protocol"] == PROTOCOL_VERSION
    assert doc["needs"] == f"i-protocol{NEEDS_PROTOCOL}"
    assert doc["library"]["package"] == "i-protocol" and doc["library"]["version"] == LIBRARY
    assert len(doc["build"]) == 40 and len(doc["library"]["build"]) == 40


def test_source_tree_is_git_s_tree_hash(tmp_path):
    # The same folder as git would hash it: packages/<pkg>/src holding one import package.
    src = tmp_path / "repo" / "src"
    (src / "pkg" / "sub").mkdir(parents=True)
    (src / "pkg" / "__init__.py").write_text("x = 1\n")
    (src / "pkg" / "a-b.py").write_text("")
    (src / "pkg" / "sub" / "m.py").write_text("y = 2\n")
    (src / "pkg" / "__pycache__").mkdir()
    (src / "pkg" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    (src / "pkg" / "empty").mkdir()
    git = ["git", "-C", str(tmp_path / "repo")]
    if subprocess.run([*git, "init", "-q"], capture_output=True).returncode != 0:
        pytest.skip("git is not available")
    (tmp_path / "repo" / ".gitignore").write_text("__pycache__/\n")
    subprocess.run([*git, "add", "-A"], check=True)
    tree = subprocess.run([*git, "write-tree"], check=True, capture_output=True, text=True).stdout.strip()
    expected = subprocess.run([*git, "rev-parse", f"{tree}:src"], check=True, capture_output=True, text=True)
    assert preflight.source_tree(str(src / "pkg")) == expected.stdout.strip()
