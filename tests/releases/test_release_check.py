"""scripts/check-releases and scripts/release, in a temporary clone of this repository: a source
change without a new version fails the check; the release helper bumps, commits and records the
build; changelog, __about__.py, pyproject and docs/compatibility.md must agree."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IDENTITY = {
    "GIT_AUTHOR_NAME": "release test",
    "GIT_AUTHOR_EMAIL": "release-test@example.invalid",
    "GIT_COMMITTER_NAME": "release test",
    "GIT_COMMITTER_EMAIL": "release-test@example.invalid",
}

pytestmark = pytest.mark.skipif(
    shutil.which("git") is None or not (ROOT / ".git").exists(), reason="needs git and a git checkout"
)


def run(clone: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **IDENTITY, "PYTHON": sys.executable}
    return subprocess.run(list(argv), cwd=clone, env=env, capture_output=True, text=True, timeout=120)


def git(clone: Path, *args: str) -> str:
    done = run(clone, "git", *args)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def check(clone: Path) -> subprocess.CompletedProcess[str]:
    return run(clone, "scripts/check-releases")


def next_patch(version: str) -> str:
    major, minor, patch = (int(p) for p in version.split("."))
    return f"{major}.{minor}.{patch + 1}"


def version_of(clone: Path, folder: str) -> str:
    about = next((clone / "packages" / folder / "src").glob("*/__about__.py"))
    match = re.search(r'^__version__ = "([^"]+)"', about.read_text(), re.M)
    assert match
    return match[1]


@pytest.fixture(scope="module")
def released(tmp_path_factory) -> Path:
    """A clone of HEAD (no tags) where every package whose source changed since its newest
    changelog entry has been released with scripts/release: the check passes there."""
    clone = tmp_path_factory.mktemp("releases") / "repo"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(ROOT), str(clone)], check=True)
    first = check(clone)
    for line in first.stderr.splitlines():
        found = re.search(r"release it with scripts/release (\S+) NEW_VERSION", line)
        if found:
            folder = found[1]
            done = run(clone, "scripts/release", folder, next_patch(version_of(clone, folder)), "pending changes")
            assert done.returncode == 0, done.stderr
    done = check(clone)
    assert done.returncode == 0, done.stderr
    return clone


@pytest.fixture
def clone(released: Path, tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", "--no-tags", str(released), str(path)], check=True)
    return path


def test_a_source_change_without_a_new_version_fails_the_check(clone):
    module = clone / "packages" / "worker-web" / "src" / "i_web" / "errors.py"
    module.write_text(module.read_text() + "\n# a change\n")
    git(clone, "commit", "-qam", "web: a change without a bump")
    done = check(clone)
    assert done.returncode == 1
    version = version_of(clone, "worker-web")
    assert f"i-worker-web: packages/worker-web/src changed since {version} was released" in done.stderr
    assert "i-core" not in done.stderr  # only the changed package is named


def test_the_release_helper_records_the_bump_commit_and_its_tree(clone):
    changelog = clone / "packages" / "worker-web" / "CHANGELOG.md"
    changelog.write_text(changelog.read_text().replace("## [Unreleased]\n", "## [Unreleased]\n\n- a note\n", 1))
    module = clone / "packages" / "worker-web" / "src" / "i_web" / "errors.py"
    module.write_text(module.read_text() + "\n# a change\n")
    git(clone, "commit", "-qam", "web: a change")
    new = next_patch(version_of(clone, "worker-web"))
    done = run(clone, "scripts/release", "i-worker-web", new, "a change")
    assert done.returncode == 0, done.stderr
    assert check(clone).returncode == 0
    bump, changelog = git(clone, "log", "-2", "--format=%H %s").splitlines()[::-1]
    commit = bump.split()[0]
    assert bump.endswith(f"i-worker-web {new}: a change")
    assert "changelog" in changelog
    text = (clone / "packages" / "worker-web" / "CHANGELOG.md").read_text()
    tree = git(clone, "rev-parse", "HEAD:packages/worker-web/src")
    assert tree == git(clone, "rev-parse", f"{commit}:packages/worker-web/src")
    unreleased, newest = text.split("\n## [")[1:3]
    assert newest.startswith(f"{new}] - ") and f"Build: commit {commit} tree {tree}" in newest
    # The [Unreleased] notes moved into the entry.
    assert "a change" in newest and "- a note" in newest and unreleased.strip() == "Unreleased]"
    assert f"| i-worker-web | {new} |" in (clone / "docs" / "compatibility.md").read_text()


def test_the_release_helper_refuses_uncommitted_source_and_an_old_version(clone):
    module = clone / "packages" / "worker-web" / "src" / "i_web" / "errors.py"
    module.write_text(module.read_text() + "\n# uncommitted\n")
    done = run(clone, "scripts/release", "worker-web", "9.9.9", "x")
    assert done.returncode != 0 and "uncommitted changes" in done.stderr
    git(clone, "checkout", "--", ".")
    done = run(clone, "scripts/release", "worker-web", "0.0.1", "x")
    assert done.returncode != 0 and "is not newer than" in done.stderr


def test_a_bump_without_a_changelog_entry_fails(clone):
    about = next((clone / "packages" / "worker-cache" / "src").glob("*/__about__.py"))
    old = version_of(clone, "worker-cache")
    about.write_text(about.read_text().replace(f'"{old}"', f'"{next_patch(old)}"'))
    git(clone, "commit", "-qam", "cache: bumped by hand")
    done = check(clone)
    assert done.returncode == 1
    assert f"i-worker-cache: __about__.py says {next_patch(old)} but" in done.stderr
    assert f"docs/compatibility.md says {old}, __about__.py says {next_patch(old)}" in done.stderr


def test_the_guard_s_range_and_pyproject_s_must_agree(clone):
    about = next((clone / "packages" / "worker-memory" / "src").glob("*/__about__.py"))
    about.write_text(re.sub(r'NEEDS_PROTOCOL = "[^"]*"', 'NEEDS_PROTOCOL = ">=0.1"', about.read_text()))
    done = check(clone)
    assert done.returncode == 1 and "NEEDS_PROTOCOL = '>=0.1', pyproject says" in done.stderr


def test_a_tag_that_names_another_build_fails(clone):
    version = version_of(clone, "worker-budget")
    text = (clone / "packages" / "worker-budget" / "CHANGELOG.md").read_text()
    older = re.findall(r"^Build: commit ([0-9a-f]{40})", text, re.M)[1]  # the previous release's build
    git(clone, "tag", f"i-worker-budget-v{version}", older)
    done = check(clone)
    assert done.returncode == 1 and f"tag i-worker-budget-v{version} names another build" in done.stderr
    git(clone, "tag", "-d", f"i-worker-budget-v{version}")
    git(clone, "tag", f"i-worker-budget-v{version}", "HEAD")
    assert check(clone).returncode == 0
