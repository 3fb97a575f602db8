"""The shape of ``i_core``, read from its source (an AST walk of ``src/i_core``) and, for the
one-shot path, from a real run:

- no import cycle, counting the imports inside functions and ``TYPE_CHECKING`` blocks too;
- no function longer than 80 lines;
- ``app`` is the home of lazy (function-level) imports: the other modules that import inside a
  function are listed here with how many, so that a new one is a decision, not a drift; the
  command line's terminal layer (``cli``, ``screen``, ``console``, ``approval_prompt``) has none;
- the core does not import its bundled workers (only ``__main__`` dispatches to them), and nothing
  replaces the model client's ``complete`` to watch it (``ModelClient.observe`` does that);
- ``i "task"`` without a terminal loads neither the line console nor the approval prompt.
"""

from __future__ import annotations

import ast
import itertools
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import orjson

from i_protocol.testing import scaled
from i_scripted import ScriptedModel

SOURCE = Path(__file__).resolve().parents[1] / "src" / "i_core"
PACKAGE = "i_core"
MAX_FUNCTION_LINES = 80

# Modules other than app.py that import inside functions, and why (see each module's docstring).
LAZY_ELSEWHERE = {
    "__main__.py": 3,
    "activity.py": 1,  # difflib only when a write or edit is shown, never on a one-shot run's start
    "render.py": 2,  # rich only at the first answer rendered on a terminal  # the i-protocol check first; a bundled worker before anything else
    "bundled/__init__.py": 9,  # only the bundled worker that is asked for
    "bundled/prompts.py": 1,  # the event types (i_protocol.events) at the first request, not at start
    "bundled/smoke.py": 1,  # the same
    "command_parts.py": 2,  # tree-sitter, only when a shell command must be judged against a rule
    "compaction.py": 2,  # (in flux: the summary request's contract moves to i_protocol, issue 36 move 2)
    "settings.py": 1,  # the credential-name rule: validating config.json compiles no pattern
    "errors.py": 2,
    "exact_count.py": 5,  # httpx and the provider adapter only when budget.exact_count is on  # describes a failure even when i-protocol cannot be imported
    "hook_results.py": 4,  # manifest, tools and config at the one check that needs each
    "initialise.py": 1,  # httpx, for `i --runtime init` asking the server its context size
    "preflight.py": 7,  # standard library only until the installed i-protocol is known to fit
    "redaction.py": 1,  # the secret table compiles on the first failure, not at every start
    "tools/recall.py": 1,  # the same table, at the first recall
    "transport.py": 7,  # httpx on a helper thread while the first workers start
}
TERMINAL_LAYER = ("cli.py", "screen.py", "console.py", "approval_prompt.py", "interrupt.py")


def _modules() -> Iterator[tuple[Path, ast.Module]]:
    for path in sorted(SOURCE.rglob("*.py")):
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _targets(path: Path, node: ast.Import | ast.ImportFrom) -> set[str]:
    """The modules of i_core one import statement names (``from . import x`` names ``i_core.x``)."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names if alias.name.split(".")[0] == PACKAGE}
    here = _name(path).split(".") + (["__init__"] if path.name == "__init__.py" else [])
    if node.level:
        base = here[: len(here) - node.level]
        target = [*base, *(node.module.split(".") if node.module else [])]
    else:
        target = (node.module or "").split(".")
    if target[0] != PACKAGE:
        return set()
    module = ".".join(target)
    return {module, *(f"{module}.{alias.name}" for alias in node.names)}


def _module_level(tree: ast.Module) -> set[int]:
    """The ids of the import statements that run when the module is imported (``if``/``try`` included)."""
    found: set[int] = set()
    body: list[ast.stmt] = list(tree.body)
    while body:
        node = body.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.add(id(node))
        elif isinstance(node, ast.If | ast.Try):
            body.extend([*node.body, *node.orelse, *getattr(node, "finalbody", [])])
            for handler in getattr(node, "handlers", []):
                body.extend(handler.body)
    return found


def _graph() -> dict[str, dict[str, str]]:
    """module -> {imported module: where}, every import statement of the module counted."""
    raw: dict[str, dict[str, str]] = {}
    for path, tree in _modules():
        edges: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for target in _targets(path, node):
                    edges.setdefault(target, f"{path.relative_to(SOURCE)}:{node.lineno}")
        raw[_name(path)] = edges
    modules = set(raw)
    packages = {name for name in modules if (SOURCE.parent / name.replace(".", "/") / "__init__.py").exists()}
    graph = {}
    for name, edges in raw.items():
        # An import of a package (its __init__) from inside it is not a dependency on every module below.
        own = {name.rsplit(".", 1)[0]} & packages
        graph[name] = {dep: where for dep, where in edges.items() if dep in modules and dep != name and dep not in own}
    return graph


def _cycles(graph: dict[str, dict[str, str]]) -> list[str]:
    """Each cycle found, as ``a (file:line) -> b (file:line) -> a``."""
    cycles: list[str] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph[node]):
            if state.get(other) == 1:
                loop = [*stack[stack.index(other) :], other]
                cycles.append(" -> ".join(f"{a} ({graph[a][b]})" for a, b in itertools.pairwise(loop)) + f" -> {other}")
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


def test_the_source_is_found() -> None:
    graph = _graph()
    assert {"i_core.app", "i_core.cli", "i_core.agent", "i_core.tools.deadline"} <= set(graph)
    assert "i_core.agent" in graph["i_core.app"]  # a function-level import is an edge


def test_the_cycle_finder_reports_a_cycle_through_a_function_level_import() -> None:
    graph = {"a": {"b": "a.py:3"}, "b": {"c": "b.py:9"}, "c": {"a": "c.py:40 (in a function)"}}
    assert _cycles(graph) == ["a (a.py:3) -> b (b.py:9) -> c (c.py:40 (in a function)) -> a"]


def test_no_import_cycle_counting_imports_inside_functions() -> None:
    assert _cycles(_graph()) == []


def test_no_function_is_longer_than_80_lines() -> None:
    long = [
        f"{path.relative_to(SOURCE)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and node.end_lineno is not None
        and node.end_lineno - node.lineno + 1 > MAX_FUNCTION_LINES
    ]
    assert long == []


def _lazy_imports() -> dict[str, int]:
    counts: dict[str, int] = {}
    for path, tree in _modules():
        top = _module_level(tree)
        lazy = sum(
            1 for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom) and id(node) not in top
        )
        if lazy:
            counts[str(path.relative_to(SOURCE))] = lazy
    return counts


def test_function_level_imports_live_in_app_and_the_listed_modules_only() -> None:
    counts = _lazy_imports()
    assert counts.pop("app.py", 0) > 0
    assert counts == LAZY_ELSEWHERE
    assert not set(TERMINAL_LAYER) & set(counts)


def test_only_the_console_entry_imports_the_bundled_workers() -> None:
    importers = sorted(
        name
        for name, edges in _graph().items()
        if not name.startswith("i_core.bundled")
        for dep in edges
        if dep == "i_core.bundled" or dep.startswith("i_core.bundled.")
    )
    assert set(importers) == {"i_core.__main__"}


def test_nothing_replaces_a_method_of_the_model_client() -> None:
    replaced = [
        f"{path.relative_to(SOURCE)}:{node.lineno}"
        for path, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Attribute) and target.attr in ("complete", "close")
    ]
    assert replaced == []


def _imported_by_a_one_shot_run(dirs: dict[str, Path], project: Path, *args: str) -> set[str]:
    with ScriptedModel([{"text": "done"}]) as model:
        config = {"protocol": "openai", "base_url": model.base_url, "model": "m", "retries": 0, "stream": False}
        (dirs["config"] / "config.json").write_bytes(orjson.dumps(config))
        result = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "i_core", "-C", str(project), *args, "hello"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=scaled(60),
        )
    assert result.returncode == 0, result.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in result.stderr.splitlines() if line.startswith("import time:")}


def test_a_one_shot_run_loads_neither_the_line_console_nor_the_approval_prompt(dirs, project) -> None:
    imported = _imported_by_a_one_shot_run(dirs, project, "--json")
    assert {"i_core.app", "i_core.screen", "i_core.agent"} <= imported
    unneeded = {"i_core.console", "i_core.approval_prompt", "i_core.brand", "readline", "difflib", "rich"}
    assert imported & unneeded == set()
