"""What the core sends that the budget tests measure, read from the core's own source: its
built-in tool schemas and its default system prompt.

This package cannot import ``i_core`` (a worker never does), and a copy would drift from what the
core really sends; so the tests read the two definitions from ``packages/core/src`` of this
checkout, by AST (nothing of the core runs). A checkout without the core is an error, not a skip.
"""

from __future__ import annotations

import ast
from functools import cache
from pathlib import Path
from typing import Any

CORE_SOURCE = Path(__file__).resolve().parents[2] / "core" / "src" / "i_core"


@cache
def _assignments(name: str) -> list[tuple[Path, ast.expr]]:
    if not CORE_SOURCE.is_dir():
        raise RuntimeError(f"the budget tests read the core's source, and {CORE_SOURCE} is missing")
    found = []
    for path in sorted(CORE_SOURCE.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
            named = any(isinstance(t, ast.Name) and t.id == name for t in targets)
            if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None and named:
                found.append((path, node.value))
    if len(found) != 1:
        raise RuntimeError(f"the core's source defines {name} {len(found)} times, not once")
    return found


def default_system_prompt(workspace: str) -> str:
    """The core's default system prompt, for a project at ``workspace``."""
    ((_path, value),) = _assignments("DEFAULT_SYSTEM_PROMPT")
    text = ast.literal_eval(value)
    assert isinstance(text, str)
    return text.replace("{{workspace}}", workspace)


def builtin_tools() -> list[dict[str, Any]]:
    """The core's built-in tool schemas (``BUILTIN_SCHEMAS``), evaluated from their module alone."""
    ((path, _value),) = _assignments("BUILTIN_SCHEMAS")
    namespace: dict[str, Any] = {"__name__": "core_builtin_schemas"}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)  # typing only, no i_core
    tools = namespace["BUILTIN_SCHEMAS"]
    assert isinstance(tools, list) and tools
    return tools
