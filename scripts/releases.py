"""Releases of the packages in packages/: one version names one build (standard library only).

Each package's ``CHANGELOG.md`` (Keep a Changelog) has one section per version, newest first,
and each section a ``Build:`` line naming the commit the version was released from and the git
tree hash of ``packages/<dir>/src`` at that commit::

    ## [0.2.1] - 2026-12-01

    Build: commit d343d6c3... tree 5896ec28...

Commands (``scripts/check-releases`` and ``scripts/release`` call them)::

    python3 scripts/releases.py check [--rev REV]     # exit 1 on any disagreement, one line each
    python3 scripts/releases.py release DIR VERSION "summary"
    python3 scripts/releases.py history DIR           # every (version, tree) pair git log shows

``check`` works in a clean clone without tags; a tag ``<dist>-v<version>`` is checked where present.
"""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMPATIBILITY = "docs/compatibility.md"
_SECTION = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\d{4}-\d{2}-\d{2}))?", re.M)
_BUILD = re.compile(r"^Build: commit (?P<commit>[0-9a-f]{40}) tree (?P<tree>[0-9a-f]{40})", re.M)
_ABOUT_VERSION = re.compile(r'^__version__ = "(?P<version>[^"]+)"', re.M)
_ABOUT_NEEDS = re.compile(r'^NEEDS_PROTOCOL = "(?P<needs>[^"]*)"', re.M)
_NEEDS_DEP = re.compile(r"^i-protocol\s*(?P<spec>[<>=!~][^;]*)$")


@dataclass(frozen=True)
class Package:
    """One package folder: its distribution name, where its version lives, what it needs."""

    folder: str  # "worker-budget"
    dist: str  # "i-worker-budget"
    about: str  # "src/i_budget/__about__.py", relative to the folder

    @property
    def src(self) -> str:
        return f"packages/{self.folder}/src"

    @property
    def changelog(self) -> str:
        return f"packages/{self.folder}/CHANGELOG.md"


@dataclass(frozen=True)
class Entry:
    """One changelog section: a version and the build it names (None for ``[Unreleased]``)."""

    version: str
    date: str | None
    commit: str | None
    tree: str | None


def git(*args: str, root: Path = ROOT, check: bool = True) -> str:
    """``git ARGS`` in ``root``; its stdout stripped."""
    done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if check and done.returncode != 0:
        raise SystemExit(f"releases: git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip() if done.returncode == 0 else ""


def packages(root: Path = ROOT) -> list[Package]:
    """Every folder under packages/ with a pyproject.toml, in name order."""
    found = []
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        doc = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        about = doc["tool"]["hatch"]["version"]["path"]
        found.append(Package(pyproject.parent.name, doc["project"]["name"], about))
    return found


def package(name: str, root: Path = ROOT) -> Package:
    """A package by folder (``worker-budget``) or distribution (``i-worker-budget``) name."""
    for p in packages(root):
        if name in (p.folder, p.dist):
            return p
    known = ", ".join(p.folder for p in packages(root))
    raise SystemExit(f"releases: no package {name!r}; known: {known}")


def entries(text: str) -> list[Entry]:
    """The changelog's sections in file order (newest first), ``[Unreleased]`` included."""
    found = []
    marks = list(_SECTION.finditer(text))
    for i, mark in enumerate(marks):
        body = text[mark.end() : marks[i + 1].start() if i + 1 < len(marks) else len(text)]
        build = _BUILD.search(body)
        found.append(
            Entry(
                mark["version"],
                mark["date"],
                build["commit"] if build else None,
                build["tree"] if build else None,
            )
        )
    return found


def released(text: str) -> list[Entry]:
    """The released sections only (``[Unreleased]`` left out), newest first."""
    return [e for e in entries(text) if e.version.lower() != "unreleased"]


def about_version(pkg: Package, root: Path = ROOT) -> str:
    """The version ``__about__.py`` holds in the working tree."""
    match = _ABOUT_VERSION.search((root / "packages" / pkg.folder / pkg.about).read_text(encoding="utf-8"))
    if match is None:
        raise SystemExit(f"releases: {pkg.folder}/{pkg.about} has no __version__ line")
    return match["version"]


def needs_protocol(pkg: Package, root: Path = ROOT) -> str | None:
    """The i-protocol requirement of pyproject.toml (``>=0.2.2,<0.3``), None when it has none."""
    doc = tomllib.loads((root / "packages" / pkg.folder / "pyproject.toml").read_text(encoding="utf-8"))
    for dep in doc["project"].get("dependencies", []):
        match = _NEEDS_DEP.match(dep.replace(" ", ""))
        if match:
            return match["spec"]
    return None


def version_key(version: str) -> tuple[int, ...]:
    """``0.2.10`` -> (0, 2, 10): numeric parts only (our versions are plain X.Y.Z)."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def compatibility_rows(root: Path = ROOT) -> dict[str, tuple[str, str]]:
    """docs/compatibility.md's "Current releases" table: dist -> (version, i-protocol needed)."""
    text = (root / COMPATIBILITY).read_text(encoding="utf-8")
    start = text.find("## Current releases")
    rows: dict[str, tuple[str, str]] = {}
    for line in text[start:].splitlines()[1:]:
        if line.startswith("## "):
            break
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and cells[0].startswith("i-"):
            rows[cells[0]] = (cells[1], cells[2])
    return rows


def check(rev: str = "HEAD", root: Path = ROOT) -> list[str]:
    """Every disagreement between source trees, changelogs, ``__about__.py``, pyproject and
    docs/compatibility.md, one line each; empty when all agree."""
    problems: list[str] = []
    compat = compatibility_rows(root) if (root / COMPATIBILITY).is_file() else None
    if compat is None:
        problems.append(f"{COMPATIBILITY} is missing")
    for pkg in packages(root):
        problems += _check_package(pkg, rev, root, compat)
    return problems


def _check_package(pkg: Package, rev: str, root: Path, compat: dict[str, tuple[str, str]] | None) -> list[str]:
    path = root / pkg.changelog
    if not path.is_file():
        return [f"{pkg.dist}: {pkg.changelog} is missing"]
    found = released(path.read_text(encoding="utf-8"))
    if not found:
        return [f"{pkg.dist}: {pkg.changelog} has no released version"]
    problems = []
    newest, version = found[0], about_version(pkg, root)
    versions = [e.version for e in found]
    if len(set(versions)) != len(versions):
        problems.append(f"{pkg.dist}: {pkg.changelog} has a version twice")
    if [version_key(v) for v in versions] != sorted((version_key(v) for v in versions), reverse=True):
        problems.append(f"{pkg.dist}: {pkg.changelog} is not newest first")
    for e in found:
        if e.commit is None or e.tree is None:
            problems.append(f"{pkg.dist}: {pkg.changelog} [{e.version}] has no 'Build: commit <sha> tree <sha>' line")
        elif _has(root, e.commit):
            at_commit = git("rev-parse", f"{e.commit}:{pkg.src}", root=root, check=False)
            if at_commit != e.tree:
                problems.append(
                    f"{pkg.dist} {e.version}: the changelog records tree {e.tree[:12]} but {pkg.src} at "
                    f"{e.commit[:12]} is {at_commit[:12] or 'absent'}"
                )
        tag = f"{pkg.dist}-v{e.version}"
        tagged = git("rev-parse", "-q", "--verify", f"refs/tags/{tag}^{{commit}}", root=root, check=False)
        if tagged and e.tree and git("rev-parse", f"{tagged}:{pkg.src}", root=root, check=False) != e.tree:
            problems.append(f"{pkg.dist}: tag {tag} names another build than the changelog's {e.tree[:12]}")
    if version != newest.version:
        problems.append(
            f"{pkg.dist}: __about__.py says {version} but {pkg.changelog}'s newest entry is {newest.version} "
            f'(release with scripts/release {pkg.folder} {version} "summary")'
        )
    tree = git("rev-parse", f"{rev}:{pkg.src}", root=root)
    if version == newest.version and newest.tree and tree != newest.tree:
        problems.append(
            f"{pkg.dist}: {pkg.src} changed since {version} was released (tree {tree[:12]}, "
            f"released {newest.tree[:12]}) but __about__.py still says {version}: "
            f'release it with scripts/release {pkg.folder} NEW_VERSION "summary"'
        )
    problems += _check_needs(pkg, root)
    if compat is not None:
        row = compat.get(pkg.dist)
        if row is None:
            problems.append(f"{pkg.dist}: {COMPATIBILITY}'s 'Current releases' table has no row")
        else:
            if row[0] != version:
                problems.append(f"{pkg.dist}: {COMPATIBILITY} says {row[0]}, __about__.py says {version}")
            needed = needs_protocol(pkg, root) or "-"
            if row[1] != needed:
                problems.append(f"{pkg.dist}: {COMPATIBILITY} says it needs i-protocol {row[1]}, pyproject {needed}")
    return problems


def _has(root: Path, commit: str) -> bool:
    """Whether the commit is in this clone (a shallow clone may lack an old release's commit)."""
    found = subprocess.run(["git", "cat-file", "-e", f"{commit}^{{commit}}"], cwd=root, capture_output=True)
    return found.returncode == 0


def _check_needs(pkg: Package, root: Path) -> list[str]:
    """The console-script guard's ``NEEDS_PROTOCOL`` (in ``__about__.py``) equals pyproject's."""
    about = (root / "packages" / pkg.folder / pkg.about).read_text(encoding="utf-8")
    match = _ABOUT_NEEDS.search(about)
    needed = needs_protocol(pkg, root)
    if match is None:
        # Only a package whose console script checks i-protocol (preflight.py) must say what it needs.
        guarded = (root / "packages" / pkg.folder / pkg.about).with_name("preflight.py").is_file()
        return [f"{pkg.dist}: __about__.py has no NEEDS_PROTOCOL (pyproject: {needed})"] if guarded else []
    if match["needs"] != needed:
        return [f"{pkg.dist}: __about__.py NEEDS_PROTOCOL = {match['needs']!r}, pyproject says i-protocol{needed}"]
    return []


def release(name: str, version: str, summary: str, root: Path = ROOT) -> str:
    """Bump ``__about__.py``, commit, then write the changelog entry naming that commit and its
    tree, and commit it too. Returns the release commit."""
    pkg = package(name, root)
    old = about_version(pkg, root)
    if version_key(version) <= version_key(old):
        raise SystemExit(f"releases: {pkg.dist} {version} is not newer than {old}")
    if git("status", "--porcelain", "--", pkg.src, root=root):
        raise SystemExit(f"releases: {pkg.src} has uncommitted changes; commit them first")
    changelog = root / pkg.changelog
    text = changelog.read_text(encoding="utf-8")
    if any(e.version == version for e in released(text)):
        raise SystemExit(f"releases: {pkg.changelog} already has {version}")
    about = root / "packages" / pkg.folder / pkg.about
    about.write_text(_ABOUT_VERSION.sub(f'__version__ = "{version}"', about.read_text(encoding="utf-8")), "utf-8")
    git("add", "--", str(about.relative_to(root)), root=root)
    git("commit", "-q", "-m", f"{pkg.dist} {version}: {summary}", "--", str(about.relative_to(root)), root=root)
    commit = git("rev-parse", "HEAD", root=root)
    tree = git("rev-parse", f"{commit}:{pkg.src}", root=root)
    changelog.write_text(_with_entry(text, version, commit, tree, summary), encoding="utf-8")
    compat = root / COMPATIBILITY
    paths = [pkg.changelog]
    if compat.is_file():
        updated = _compat_version(compat.read_text(encoding="utf-8"), pkg.dist, old, version)
        if updated is not None:
            compat.write_text(updated, encoding="utf-8")
            paths.append(COMPATIBILITY)
    git("add", "--", *paths, root=root)
    git("commit", "-q", "-m", f"{pkg.dist} {version}: changelog (build {tree[:12]})", "--", *paths, root=root)
    return commit


def _with_entry(text: str, version: str, commit: str, tree: str, summary: str) -> str:
    """The changelog with a new section for ``version``; an ``[Unreleased]`` section's notes move
    into it (the summary goes first)."""
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    marks = list(_SECTION.finditer(text))
    notes = ""
    if marks and marks[0]["version"].lower() == "unreleased":
        end = marks[1].start() if len(marks) > 1 else len(text)
        notes = text[marks[0].end() : end].strip()
        head, rest = text[: marks[0].start()], text[end:]
        text = head + "## [Unreleased]\n\n" + rest
        marks = list(_SECTION.finditer(text))
        insert = marks[1].start() if len(marks) > 1 else len(text)
    else:
        insert = marks[0].start() if marks else len(text)
    # Notes written under [Unreleased] keep their own headings; the summary leads them.
    body = f"{summary}\n\n{notes}\n" if notes else f"### Changed\n\n- {summary}\n"
    section = f"## [{version}] - {today}\n\nBuild: commit {commit} tree {tree}\n\n{body}\n"
    return text[:insert] + section + text[insert:]


def _compat_version(text: str, dist: str, old: str, new: str) -> str | None:
    """docs/compatibility.md with the dist's "Current releases" row naming ``new``."""
    pattern = re.compile(rf"^(\|\s*`?{re.escape(dist)}`?\s*\|\s*`?){re.escape(old)}(`?\s*\|)", re.M)
    updated, count = pattern.subn(rf"\g<1>{new}\g<2>", text, count=1)
    return updated if count else None


def history(name: str, root: Path = ROOT) -> list[tuple[str, str, str]]:
    """Every change of (version, src tree) in first-parent history, oldest first:
    (version, tree, first commit). A version listed twice named two builds."""
    pkg = package(name, root)
    rows: list[tuple[str, str, str]] = []
    for commit in git("rev-list", "--reverse", "--first-parent", "HEAD", "--", pkg.src, root=root).split():
        about = git("show", f"{commit}:packages/{pkg.folder}/{pkg.about}", root=root, check=False)
        match = _ABOUT_VERSION.search(about)
        tree = git("rev-parse", f"{commit}:{pkg.src}", root=root)
        version = match["version"] if match else "?"
        if not rows or rows[-1][:2] != (version, tree):
            rows.append((version, tree, commit))
    return rows


def main(argv: list[str]) -> int:
    if argv[:1] == ["check"]:
        rev = argv[argv.index("--rev") + 1] if "--rev" in argv else "HEAD"
        problems = check(rev)
        for line in problems:
            print(f"check-releases: {line}", file=sys.stderr)
        count = len(packages())
        print(f"check-releases: {count} packages, {len(problems)} problem(s)")
        return 1 if problems else 0
    if argv[:1] == ["release"] and len(argv) == 4:
        commit = release(argv[1], argv[2], argv[3])
        print(f"released {package(argv[1]).dist} {argv[2]} at {commit[:12]} (changelog committed after it)")
        return 0
    if argv[:1] == ["history"] and len(argv) == 2:
        for version, tree, commit in history(argv[1]):
            print(f"{version:10} tree {tree[:12]}  first at {commit[:12]}")
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
