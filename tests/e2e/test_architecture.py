"""Each shared contract has one home, and no package's modules import each other in a cycle.

Like httpx's test of ``__all__``, this reads the source (an AST scan of ``packages/*/src``): a
second copy of the history validator, of ``text_of``, of a secret pattern, of a bounded read or
of a locked update fails here, naming the file and line, before it can drift from the first. So
does a second way to measure (a set of image part types, an inline ``surrogatepass`` length, a
guessed size of the core's summary-request wrapper, or a copy of its texts): sizes are
``i_protocol.history``'s and the summary request is ``i_protocol.summary``'s. And so does a
settings file parsed by hand (``i_protocol.settings`` words every field check, in each package's
``settings.py``), an atomic write's temporary named or cleaned up outside ``i_protocol.atomic``, or
a whole file read with ``.read_text()``/``.read_bytes()`` instead of ``i_protocol.files``'s
bounded reads.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(ROOT.glob("packages/*/src/*/**/*.py"))
PROTOCOL = ROOT / "packages/protocol/src/i_protocol"

HOMES = {
    "atomic": PROTOCOL / "atomic.py",
    "settings": PROTOCOL / "settings.py",
    "history": PROTOCOL / "history.py",
    "secrets": PROTOCOL / "secrets.py",
    "files": PROTOCOL / "files.py",
    "summary": PROTOCOL / "summary.py",
}
HISTORY_FUNCTIONS = {"validate_history", "check_tool_calls", "text_of", "content_text", "is_summary_message"}
SECRET_MARKERS = ("sk-", "ghp_", "github_pat_", "AKIA", "xox", "glpat-", "hf_", "npm_", "-----BEGIN")
IMAGE_KINDS = frozenset({"image_url", "image", "input_image"})
SCRIPTED = ROOT / "packages/scripted-model/src"
"""The dev-only scripted model plays the provider's server, a third party that knows no i_protocol:
it counts images the way a server does, by its own reading of the formats."""
WRAPPER_TEXTS = ("<untrusted_transcript>", "<summary_so_far>", "untrusted transcript of an earlier part")


def _trees() -> Iterator[tuple[Path, ast.Module]]:
    for path in SOURCES:
        yield path, ast.parse(path.read_text(encoding="utf-8"), str(path))


def _docstrings(tree: ast.Module) -> set[int]:
    """The ids of docstring nodes: prose may name a prefix or a file name it does not implement."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _strings(tree: ast.Module) -> list[ast.Constant]:
    """Every string literal of a module except its docstrings."""
    skip = _docstrings(tree)
    return [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip
    ]


def _where(path: Path, node: ast.AST) -> str:
    return f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', '?')}"


def test_the_sources_are_found():
    packages = {path.relative_to(ROOT).parts[1] for path in SOURCES}
    assert {"protocol", "core", "worker-budget", "worker-compact", "worker-memory"} <= packages
    assert all(home.is_file() for home in HOMES.values())


def test_the_history_format_is_read_in_one_place():
    copies = [
        _where(path, node)
        for path, tree in _trees()
        if path != HOMES["history"]
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.lstrip("_") in HISTORY_FUNCTIONS
    ]
    assert copies == [], f"history helpers defined outside i_protocol.history: {copies}"


def _is_bounded_read(node: ast.AST) -> bool:
    """``handle.read(LIMIT + 1)``: the hand-written way to read at most a limit and notice more."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "read"):
        return False
    if len(node.args) != 1 or not isinstance(node.args[0], ast.BinOp):
        return False
    right = node.args[0].right
    return isinstance(node.args[0].op, ast.Add) and isinstance(right, ast.Constant) and right.value == 1


def test_bounded_reads_and_locked_updates_live_in_i_protocol_files():
    copies = []
    for path, tree in _trees():
        if path == HOMES["files"]:
            continue
        for node in ast.walk(tree):
            if _is_bounded_read(node):
                copies.append(f"{_where(path, node)} bounded read")
            elif isinstance(node, ast.Name | ast.Attribute) and getattr(node, "id", getattr(node, "attr", "")) in (
                "FileLock",
                "SoftFileLock",
            ):
                copies.append(f"{_where(path, node)} FileLock")
        copies.extend(
            f"{_where(path, node)} corrupt-file naming" for node in _strings(tree) if ".corrupt-" in node.value
        )
    assert copies == [], f"file helpers re-implemented outside i_protocol.files: {copies}"


def test_secret_patterns_live_in_i_protocol_secrets():
    copies = [
        _where(path, node)
        for path, tree in _trees()
        if path != HOMES["secrets"]
        for node in _strings(tree)
        if any(marker in node.value for marker in SECRET_MARKERS)
        and ("\\" in node.value or "[" in node.value)  # a regular expression, not prose naming a prefix
    ]
    assert copies == [], f"secret patterns outside i_protocol.secrets: {copies}"


def _module_imports(path: Path, package_root: Path, tree: ast.Module) -> set[str]:
    """Modules of the same package imported at module level (``TYPE_CHECKING`` blocks included)."""
    package = package_root.name
    here = path.relative_to(package_root.parent).with_suffix("").parts
    if here[-1] == "__init__":
        here = here[:-1]
    found: set[str] = set()
    body: list[ast.stmt] = list(tree.body)
    while body:
        node = body.pop(0)
        if isinstance(node, ast.If | ast.Try):
            body.extend([*node.body, *getattr(node, "orelse", []), *getattr(node, "finalbody", [])])
            for handler in getattr(node, "handlers", []):
                body.extend(handler.body)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level + (1 if path.name == "__init__.py" else 0)]
                target = (*base, *(node.module.split(".") if node.module else ()))
            else:
                target = tuple((node.module or "").split("."))
            if target and target[0] == package:
                found.add(".".join(target))
                found.update(".".join((*target, alias.name)) for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.split(".")[0] == package)
    return found


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        stack.append(node)
        for other in sorted(graph.get(node, ())):
            if state.get(other) == 1:
                cycles.append([*stack[stack.index(other) :], other])
            elif other not in state:
                visit(other, stack)
        stack.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])
    return cycles


@pytest.mark.parametrize("package_root", sorted(ROOT.glob("packages/*/src/*/")), ids=lambda p: p.name)
def test_no_import_cycle(package_root: Path):
    graph: dict[str, set[str]] = {}
    for path in sorted(package_root.rglob("*.py")):
        parts = path.relative_to(package_root.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[name] = _module_imports(path, package_root, tree)
    modules = set(graph)
    # An import of a package's __init__ is not a dependency on every module below it.
    graph = {name: {dep for dep in deps if dep in modules and dep != name} for name, deps in graph.items()}
    packages = {name for name in modules if (package_root.parent / name.replace(".", "/") / "__init__.py").exists()}
    graph = {name: deps - ({name.rsplit(".", 1)[0]} & packages) for name, deps in graph.items()}
    assert _cycles(graph) == []


def _image_kind_sets(tree: ast.Module) -> Iterator[ast.AST]:
    """Literal collections naming two or more image part types: a second answer to what carries an image."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Set | ast.Tuple | ast.List):
            kinds = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in IMAGE_KINDS}
            if len(kinds) >= 2:
                yield node


def test_what_carries_an_image_is_answered_in_i_protocol_history():
    copies = [
        _where(path, node)
        for path, tree in _trees()
        if path != HOMES["history"] and not path.is_relative_to(SCRIPTED)
        for node in _image_kind_sets(tree)
    ]
    assert copies == [], f"image part types listed outside i_protocol.history (use is_image_part): {copies}"


def _is_surrogatepass_length(node: ast.AST) -> bool:
    """``len(x.encode("utf-8", "surrogatepass"))``: the inline UTF-8 length idiom."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len" and node.args):
        return False
    inner = node.args[0]
    return (
        isinstance(inner, ast.Call)
        and isinstance(inner.func, ast.Attribute)
        and inner.func.attr == "encode"
        and any(isinstance(a, ast.Constant) and a.value == "surrogatepass" for a in inner.args)
    )


def test_utf8_lengths_are_measured_by_i_protocol_history():
    copies = [
        _where(path, node)
        for path, tree in _trees()
        if path != HOMES["history"]
        for node in ast.walk(tree)
        if _is_surrogatepass_length(node)
    ]
    assert copies == [], f"inline surrogatepass lengths (use i_protocol.history.utf8_len / wire_bytes): {copies}"


def _wrapper_guesses(tree: ast.Module) -> Iterator[ast.AST]:
    """A number bound to a name about the summary request's wrapper (``CHUNK_WRAPPER_BYTES = 512``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Constant):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [t.id for t in targets if isinstance(t, ast.Name)]
            if isinstance(node.value.value, int | float) and any("WRAPPER" in name.upper() for name in names):
                yield node


def test_the_summary_request_wrapper_is_neither_copied_nor_guessed_outside_i_protocol_summary():
    copies = []
    for path, tree in _trees():
        if path == HOMES["summary"]:
            continue
        copies.extend(f"{_where(path, node)} wrapper size" for node in _wrapper_guesses(tree))
        copies.extend(
            f"{_where(path, node)} wrapper text"
            for node in _strings(tree)
            if any(text in node.value for text in WRAPPER_TEXTS)
        )
    assert copies == [], (
        "the summary request's wrapper outside i_protocol.summary (the core sends its size as "
        f"summary_request_overhead; read it with read_overhead): {copies}"
    )


def _string_parts(tree: ast.Module) -> list[ast.Constant]:
    """Every string literal and every literal part of an f-string, docstrings left out."""
    return _strings(tree)  # an f-string's literal parts are Constant nodes inside its JoinedStr


HAND_WRITTEN_CHECKS = ("must be true or false", "must be an integer", "must be one of", "must be a number")
"""The wording of ``i_protocol.settings``' own checks: written by hand in a settings module, it is a
field check that should be a call of ``require_*``/``optional_*``."""


def test_settings_files_are_parsed_on_i_protocol_settings_in_modules_named_settings():
    problems = []
    for path, tree in _trees():
        if path.parent == PROTOCOL or path.name not in ("settings.py", "config.py"):
            continue
        if path.name == "config.py":
            problems.append(f"{path.relative_to(ROOT)}: a settings parser is named settings.py in every package")
        imports = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
        if "i_protocol.settings" not in imports:
            problems.append(f"{path.relative_to(ROOT)}: does not check its fields with i_protocol.settings")
        problems.extend(
            f"{_where(path, node)} hand-written field check ({node.value.strip()!r})"
            for node in _string_parts(tree)
            if any(words in node.value for words in HAND_WRITTEN_CHECKS)
        )
    assert problems == [], f"settings parsed by hand: {problems}"


def test_atomic_write_temporaries_are_named_and_cleaned_in_i_protocol_atomic():
    copies = [
        f"{_where(path, node)} {node.value!r}"
        for path, tree in _trees()
        if path != HOMES["atomic"]
        for node in _string_parts(tree)
        if node.value.endswith(".tmp") or "\\.tmp" in node.value
    ]
    assert copies == [], (
        f"temporary naming outside i_protocol.atomic (use temporary_path, create_exclusive, remove_stale_temporaries): {copies}"
    )


WHOLE_READS_ALLOWED = {
    "packages/core/src/i_core/windows.py": "the package's own model_windows.json",
    "packages/core/src/i_core/modules.py": "the package's own tool_schemas.json",
    "packages/core/src/i_core/check/checkpoint.py": "the few bytes the check itself wrote",
    "packages/protocol/src/i_protocol/testing.py": "the package's own secret_forms.json",
    "packages/scripted-model/src/i_scripted/script.py": "a test's script (dev-only package)",
    "packages/worker-checkpoint/src/i_checkpoint/states.py": "the worker's own kept copies, checked by digest",
    "packages/worker-checkpoint/src/i_checkpoint/store.py": "the worker's own tree.json records",
}
"""Files read whole on purpose, and why: everything else a program reads (a user's file, a queue, a
config) goes through ``i_protocol.files.read_bytes``/``read_text``/``read_json`` with a limit."""


def test_files_are_read_with_a_bound():
    unbounded = [
        _where(path, node)
        for path, tree in _trees()
        if path != HOMES["files"] and str(path.relative_to(ROOT)) not in WHOLE_READS_ALLOWED
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("read_text", "read_bytes")
        # Path's methods take no argument or an encoding; i_protocol.files.read_text(path, limit) is bounded.
        and all(isinstance(arg, ast.Constant) and isinstance(arg.value, str) for arg in node.args)
    ]
    assert unbounded == [], f"whole-file reads without a size bound (use i_protocol.files): {unbounded}"
    stale = [name for name in WHOLE_READS_ALLOWED if not (ROOT / name).is_file()]
    assert stale == [], f"WHOLE_READS_ALLOWED names files that are gone: {stale}"


TEST_HELPERS = {"alive", "wait_dead"}
"""Test support every package's tests share lives in ``i_protocol.testing``."""


def test_shared_test_helpers_are_not_copied_into_test_files():
    copies = [
        _where(path, node)
        for path in sorted([*ROOT.glob("packages/*/tests/**/*.py"), *ROOT.glob("tests/**/*.py")])
        for node in ast.parse(path.read_text(encoding="utf-8"), str(path)).body
        if isinstance(node, ast.FunctionDef) and node.name.lstrip("_") in TEST_HELPERS
    ]
    assert copies == [], f"copies of i_protocol.testing's helpers: {copies}"
