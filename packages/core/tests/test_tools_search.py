"""glob and search: patterns, skip rules, walk and result limits, real trees in tmp_path."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_core.tools import ToolContext, ToolError, execute, prepare
from i_core.tools.globbing import compile_glob


def run(name: str, arguments: dict, ctx: ToolContext) -> str:
    return execute(prepare(name, arguments, ctx), ctx).output


def make(root: Path, files: dict[str, str | bytes]) -> None:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)


@pytest.fixture
def tree(tmp_path: Path) -> ToolContext:
    make(
        tmp_path,
        {
            "a.py": "import os\nTODO = 1\n",
            "src/b.py": "def f():\n    return 'todo later'\n",
            "src/deep/c.py": "x = 'TODO'\n",
            "src/deep/d.txt": "TODO in text\n",
            "README.md": "# readme TODO\n",
            ".hidden/h.py": "TODO hidden\n",
            ".env": "TODO=secret\n",
            "node_modules/m/index.js": "TODO node\n",
            "build/out.py": "TODO build\n",
            "dist/x.py": "TODO dist\n",
            "target/t.rs": "TODO target\n",
            "__pycache__/c.py": "TODO cache\n",
            ".venv/lib.py": "TODO venv\n",
            "pkg.egg-info/PKG-INFO": "TODO egg\n",
            "bin.dat": b"TODO\x00binary",
            "big.txt": "TODO\n" + "x" * (1024 * 1024 + 10),
        },
    )
    os.symlink(tmp_path / "a.py", tmp_path / "link.py")
    os.symlink(tmp_path / "src", tmp_path / "linkdir")
    return ToolContext(tmp_path)


# --- glob -------------------------------------------------------------------------------------


def test_glob_double_star_sorted_and_skips(tree: ToolContext) -> None:
    assert run("glob", {"pattern": "**/*.py"}, tree).splitlines() == ["a.py", "src/b.py", "src/deep/c.py"]


def test_glob_single_star_is_one_level(tree: ToolContext) -> None:
    assert run("glob", {"pattern": "*.py"}, tree).splitlines() == ["a.py"]
    assert run("glob", {"pattern": "src/*"}, tree).splitlines() == ["src/b.py"]
    assert run("glob", {"pattern": "src/**"}, tree).splitlines() == ["src/b.py", "src/deep/c.py", "src/deep/d.txt"]
    assert run("glob", {"pattern": "src/**/*.txt"}, tree).splitlines() == ["src/deep/d.txt"]


def test_glob_explicit_hidden_prefix_and_literal(tree: ToolContext) -> None:
    assert run("glob", {"pattern": ".hidden/*.py"}, tree).splitlines() == [".hidden/h.py"]
    assert run("glob", {"pattern": "src/deep/c.py"}, tree) == "src/deep/c.py"


def test_glob_path_argument_and_no_match(tree: ToolContext) -> None:
    assert run("glob", {"pattern": "*.py", "path": "src"}, tree).splitlines() == ["src/b.py"]
    assert run("glob", {"pattern": "**/*.zig"}, tree).startswith("no files match **/*.zig")
    assert "does not exist" in run("glob", {"pattern": "nowhere/*.py"}, tree)


def test_glob_on_a_file_base_is_an_error(tree: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"glob: a.py: not a directory"):
        run("glob", {"pattern": "*", "path": "a.py"}, tree)


def test_glob_classes_and_question_mark() -> None:
    assert compile_glob("[ab].py").fullmatch("a.py")
    assert not compile_glob("[!ab].py").fullmatch("a.py")
    assert compile_glob("[!ab].py").fullmatch("c.py")
    assert compile_glob("?.py").fullmatch("x.py") and not compile_glob("?.py").fullmatch("xy.py")
    assert compile_glob("**/x").fullmatch("x") and compile_glob("**/x").fullmatch("a/b/x")
    assert not compile_glob("*/x").fullmatch("a/b/x")


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab*?[]!/.\\", max_size=12), st.text(alphabet="ab/.", max_size=12))
def test_glob_compiler_never_crashes(pattern: str, path: str) -> None:
    compile_glob(pattern).fullmatch(path)


def test_glob_walk_limit(tmp_path: Path) -> None:
    for index in range(10_001):
        (tmp_path / f"f{index:05}.txt").write_bytes(b"")
    out = run("glob", {"pattern": "*.txt"}, ToolContext(tmp_path))
    lines = out.splitlines()
    assert lines[-1].startswith("[walk stopped after 10000 files")
    assert len(lines) == 10_001  # 10000 files + the note


# --- search -----------------------------------------------------------------------------------


def test_search_skip_rules(tree: ToolContext) -> None:
    out = run("search", {"pattern": "TODO"}, tree).splitlines()
    assert out == [
        "README.md:1: # readme TODO",
        "a.py:2: TODO = 1",
        "src/deep/c.py:1: x = 'TODO'",
        "src/deep/d.txt:1: TODO in text",
    ]


def test_search_case_insensitive_and_literal(tree: ToolContext) -> None:
    out = run("search", {"pattern": "todo", "case_sensitive": False, "glob": "*.py"}, tree).splitlines()
    assert out == ["a.py:2: TODO = 1", "src/b.py:2: return 'todo later'", "src/deep/c.py:1: x = 'TODO'"]
    assert run("search", {"pattern": "f()", "regex": False}, tree) == "src/b.py:1: def f():"
    assert run("search", {"pattern": r"^def \w+\(\):$"}, tree) == "src/b.py:1: def f():"


def test_search_glob_with_folder(tree: ToolContext) -> None:
    assert run("search", {"pattern": "TODO", "glob": "src/**/*.txt"}, tree) == "src/deep/d.txt:1: TODO in text"


def test_search_path_folder_and_single_file(tree: ToolContext) -> None:
    assert run("search", {"pattern": "TODO", "path": "src/deep"}, tree).splitlines() == [
        "src/deep/c.py:1: x = 'TODO'",
        "src/deep/d.txt:1: TODO in text",
    ]
    assert run("search", {"pattern": "TODO", "path": ".hidden/h.py"}, tree) == ".hidden/h.py:1: TODO hidden"


def test_search_invalid_regex_and_missing_root(tree: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"search: invalid regex '\(unclosed'.*regex: false"):
        prepare("search", {"pattern": "(unclosed"}, tree)
    with pytest.raises(ToolError, match="search: nowhere: no such file or directory"):
        run("search", {"pattern": "x", "path": "nowhere"}, tree)
    with pytest.raises(ToolError, match="missing required argument 'pattern'"):
        prepare("search", {}, tree)


def test_search_no_matches(tree: ToolContext) -> None:
    assert run("search", {"pattern": "zzzqqq"}, tree).startswith("no matches for 'zzzqqq' in . (")


def test_search_patterns_the_precheck_must_not_hide(tmp_path: Path) -> None:
    make(tmp_path, {"f.txt": "alpha\nbeta\nfoo\ngamma foo\n"})
    ctx = ToolContext(tmp_path)
    # Per-line meaning: \A and \Z anchor each line; a negative lookahead sees the end of the line.
    assert run("search", {"pattern": r"\Abeta\Z"}, ctx) == "f.txt:2: beta"
    assert run("search", {"pattern": r"foo(?!\s)"}, ctx).splitlines() == ["f.txt:3: foo", "f.txt:4: gamma foo"]
    assert run("search", {"pattern": "^gamma"}, ctx) == "f.txt:4: gamma foo"


def test_search_crlf_lines(tmp_path: Path) -> None:
    make(tmp_path, {"w.txt": b"one\r\ntwo\r\n"})
    assert run("search", {"pattern": "two$"}, ToolContext(tmp_path)) == "w.txt:2: two"


def test_search_long_line_snippet_shows_the_match(tmp_path: Path) -> None:
    make(tmp_path, {"min.js": "a" * 5000 + "NEEDLE" + "b" * 5000})
    out = run("search", {"pattern": "NEEDLE"}, ToolContext(tmp_path))
    assert "NEEDLE" in out and len(out) < 400


def test_search_result_limit(tmp_path: Path) -> None:
    make(tmp_path, {"many.txt": "hit\n" * 20_001})
    out = run("search", {"pattern": "hit"}, ToolContext(tmp_path, max_output_chars=10_000_000)).splitlines()
    assert len(out) == 20_001 and out[-2] == "many.txt:20000: hit"
    assert out[-1] == "[stopped at 20000 results; narrow the path or pattern]"


def test_search_walk_limit(tmp_path: Path) -> None:
    for index in range(10_001):
        (tmp_path / f"f{index:05}.txt").write_bytes(b"k\n")
    out = run("search", {"pattern": "k"}, ToolContext(tmp_path, max_output_chars=10_000_000)).splitlines()
    assert len(out) == 10_001
    assert out[-1].startswith("[walk stopped after 10000 files")
    assert "f10000.txt:1: k" not in out


def test_search_output_cap(tmp_path: Path) -> None:
    make(tmp_path, {"many.txt": "hit\n" * 5000})
    out = run("search", {"pattern": "hit"}, ToolContext(tmp_path, max_output_chars=1000))
    assert len(out) < 1200 and "characters cut" in out


def test_search_surrogate_names_and_contents(tmp_path: Path) -> None:
    raw = os.fsencode(str(tmp_path)) + b"/n\xff.txt"
    with open(raw, "wb") as handle:
        handle.write(b"match \xed\xa0\x80 here\n")  # an encoded lone surrogate: invalid UTF-8
    ctx = ToolContext(tmp_path)
    out = run("search", {"pattern": "match"}, ctx)
    out.encode("utf-8")
    assert out.startswith("n\\xff.txt:1: match")
    run("glob", {"pattern": "*.txt"}, ctx).encode("utf-8")
    run("search", {"pattern": "\ud800"}, ctx).encode("utf-8")


def test_search_no_phantom_line_after_final_newline(tmp_path: Path) -> None:
    make(tmp_path, {"e.txt": "a\n\nb\n"})
    assert run("search", {"pattern": "^$"}, ToolContext(tmp_path)) == "e.txt:2: "
