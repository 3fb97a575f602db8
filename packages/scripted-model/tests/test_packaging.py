"""Dev only, both ways: the double imports no i package, and no runtime package uses the double."""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

PACKAGES = Path(__file__).resolve().parents[2]
OWN_SOURCES = PACKAGES / "scripted-model" / "src"
ALLOWED = {"orjson", *sys.stdlib_module_names}


def imported_modules(source: Path) -> set[str]:
    """The top-level names of every module ``source`` imports (relative imports count as its own)."""
    names = set()
    for node in ast.walk(ast.parse(source.read_text(), str(source))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def test_the_double_imports_only_itself_orjson_and_the_stdlib() -> None:
    sources = sorted(OWN_SOURCES.rglob("*.py"))
    assert sources, OWN_SOURCES
    foreign = {
        f"{path.relative_to(PACKAGES)}: {name}"
        for path in sources
        for name in imported_modules(path)
        if name != "i_scripted" and (name.startswith("i_") or name not in ALLOWED)
    }
    assert foreign == set()


def test_no_runtime_package_imports_or_depends_on_the_double() -> None:
    runtime = [path for path in sorted(PACKAGES.iterdir()) if (path / "pyproject.toml").is_file()]
    runtime = [path for path in runtime if path.name != "scripted-model"]
    assert any(path.name == "core" for path in runtime), runtime
    users = {
        str(source.relative_to(PACKAGES))
        for package in runtime
        for source in (package / "src").rglob("*.py")
        if "i_scripted" in imported_modules(source) or source.stem == "scripted"
    }
    dependents = {
        package.name
        for package in runtime
        if any(
            requirement.startswith("i-scripted-model")
            for requirement in tomllib.loads((package / "pyproject.toml").read_text())["project"]["dependencies"]
        )
    }
    assert (users, dependents) == (set(), set())
