"""read / write / edit: real files in tmp_path, including the pre-approval snapshot race."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_core.tools import ToolContext, ToolError, execute, prepare

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 32


def run(name: str, arguments: dict, ctx: ToolContext) -> str:
    return execute(prepare(name, arguments, ctx), ctx).output


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ToolContext(ws)


# --- read -------------------------------------------------------------------------------------


def test_read_numbers_lines_relative_to_workspace(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("one\ntwo\r\nthree")
    assert run("read", {"path": "a.txt"}, ctx) == "     1\tone\n     2\ttwo\n     3\tthree"


def test_read_absolute_path_outside_workspace(ctx: ToolContext, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("hello\n")
    assert run("read", {"path": str(outside)}, ctx) == "     1\thello"


def test_read_offset_and_limit(ctx: ToolContext) -> None:
    (ctx.workspace / "n.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    out = run("read", {"path": "n.txt", "offset": 3, "limit": 2}, ctx)
    assert out.splitlines()[:2] == ["     3\tline3", "     4\tline4"]
    assert "continue with offset=5" in out


def test_read_default_limit_is_2000_lines(ctx: ToolContext) -> None:
    (ctx.workspace / "big.txt").write_text("x\n" * 2500)
    out = run("read", {"path": "big.txt"}, ctx)
    assert out.count("\tx") == 2000 and "offset=2001" in out


def test_read_offset_past_end(ctx: ToolContext) -> None:
    (ctx.workspace / "s.txt").write_text("a\nb\n")
    with pytest.raises(ToolError, match=r"read: s.txt: offset 9 is past the end of the file \(2 lines\)"):
        run("read", {"path": "s.txt", "offset": 9}, ctx)


def test_read_output_is_capped(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path, max_output_chars=1000)
    (tmp_path / "wide.txt").write_text(("y" * 99 + "\n") * 100)
    out = run("read", {"path": "wide.txt"}, ctx)
    assert len(out) < 1200 and "output cap of 1000 characters" in out and "continue with offset=" in out


def test_read_long_line_is_cut(ctx: ToolContext) -> None:
    (ctx.workspace / "long.txt").write_text("z" * 5000)
    out = run("read", {"path": "long.txt"}, ctx)
    assert "line cut at 2000 characters" in out and len(out) < 2200


def test_read_huge_single_line_does_not_load_it(ctx: ToolContext) -> None:
    (ctx.workspace / "one.txt").write_bytes(b"q" * (3 * 1024 * 1024) + b"\nsecond\n")
    out = run("read", {"path": "one.txt", "offset": 2}, ctx)
    assert out == "     2\tsecond"


def test_read_empty_file(ctx: ToolContext) -> None:
    (ctx.workspace / "e.txt").write_bytes(b"")
    assert "empty file" in run("read", {"path": "e.txt"}, ctx)


def test_read_directory_is_a_clear_error(ctx: ToolContext) -> None:
    (ctx.workspace / "sub").mkdir()
    with pytest.raises(ToolError, match="read: sub: is a directory; use glob"):
        run("read", {"path": "sub"}, ctx)


def test_read_binary_file_is_a_clear_error(ctx: ToolContext) -> None:
    (ctx.workspace / "b.bin").write_bytes(b"abc\x00def")
    with pytest.raises(ToolError, match=r"read: b.bin: binary file"):
        run("read", {"path": "b.bin"}, ctx)
    (ctx.workspace / "p.png").write_bytes(PNG)
    with pytest.raises(ToolError, match="use view_image"):
        run("read", {"path": "p.png"}, ctx)


def test_read_missing_file(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"read: nope.txt: no such file"):
        run("read", {"path": "nope.txt"}, ctx)


def test_read_invalid_utf8_is_replaced_not_fatal(ctx: ToolContext) -> None:
    (ctx.workspace / "latin.txt").write_bytes(b"caf\xe9\n")
    assert run("read", {"path": "latin.txt"}, ctx) == "     1\tcaf\ufffd"


def test_read_bad_arguments(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="read: missing required argument 'path'"):
        prepare("read", {}, ctx)
    with pytest.raises(ToolError, match="argument 'offset' must be an integer"):
        prepare("read", {"path": "a", "offset": "3"}, ctx)
    with pytest.raises(ToolError, match="argument 'limit' must be between 1 and"):
        prepare("read", {"path": "a", "limit": 0}, ctx)
    with pytest.raises(ToolError, match="unknown argument"):
        prepare("read", {"path": "a", "bogus": 1}, ctx)
    with pytest.raises(ToolError, match="must be a JSON object"):
        prepare("read", ["a"], ctx)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="argument 'path' must not be empty"):
        prepare("read", {"path": ""}, ctx)
    with pytest.raises(ToolError, match="argument 'offset' must be an integer"):
        prepare("read", {"path": "a", "offset": True}, ctx)


# --- write ------------------------------------------------------------------------------------


def test_write_creates_parent_folders(ctx: ToolContext) -> None:
    prepared = prepare("write", {"path": "deep/er/f.txt", "content": "hi\n"}, ctx)
    assert prepared.summary == "write deep/er/f.txt: create (3 bytes)"
    assert "created deep/er/f.txt" in execute(prepared, ctx).output
    assert (ctx.workspace / "deep/er/f.txt").read_text() == "hi\n"


def test_write_keeps_the_file_mode_and_leaves_no_temp_file(ctx: ToolContext) -> None:
    target = ctx.workspace / "script.sh"
    target.write_text("old\n")
    target.chmod(0o751)
    prepared = prepare("write", {"path": "script.sh", "content": "#!/bin/sh\n"}, ctx)
    assert "overwrite (4 -> 10 bytes)" in prepared.summary
    execute(prepared, ctx)
    assert stat.S_IMODE(target.stat().st_mode) == 0o751
    assert target.read_text() == "#!/bin/sh\n"
    assert sorted(p.name for p in ctx.workspace.iterdir()) == ["script.sh"]


def test_write_is_atomic_rename(ctx: ToolContext) -> None:
    target = ctx.workspace / "f.txt"
    target.write_text("old")
    inode = target.stat().st_ino
    run("write", {"path": "f.txt", "content": "new"}, ctx)
    assert target.stat().st_ino != inode  # replaced by rename, not rewritten in place


def test_write_through_symlink_replaces_target(ctx: ToolContext) -> None:
    real = ctx.workspace / "real.txt"
    real.write_text("a")
    (ctx.workspace / "link.txt").symlink_to(real)
    run("write", {"path": "link.txt", "content": "b"}, ctx)
    assert (ctx.workspace / "link.txt").is_symlink() and real.read_text() == "b"


def test_write_refuses_if_file_changed_after_approval(ctx: ToolContext) -> None:
    target = ctx.workspace / "f.txt"
    target.write_text("v1")
    prepared = prepare("write", {"path": "f.txt", "content": "mine"}, ctx)
    target.write_text("v2 by someone else")
    with pytest.raises(
        ToolError, match=r"write: f.txt: changed on disk since it was shown for approval; read it again"
    ):
        execute(prepared, ctx)
    assert target.read_text() == "v2 by someone else"


def test_write_refuses_if_file_appeared_after_approval(ctx: ToolContext) -> None:
    prepared = prepare("write", {"path": "new.txt", "content": "mine"}, ctx)
    (ctx.workspace / "new.txt").write_text("theirs")
    with pytest.raises(ToolError, match="changed on disk"):
        execute(prepared, ctx)


def test_write_to_directory_or_under_a_file(ctx: ToolContext) -> None:
    (ctx.workspace / "d").mkdir()
    with pytest.raises(ToolError, match="write: d: is a directory"):
        prepare("write", {"path": "d", "content": ""}, ctx)
    (ctx.workspace / "file").write_text("x")
    with pytest.raises(ToolError, match=r"write: file/x.txt: a parent of this path is a file"):
        execute(prepare("write", {"path": "file/x.txt", "content": ""}, ctx), ctx)


def test_write_lone_surrogate_content_is_a_tool_error(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match=r"write: a.txt: content is not valid Unicode \(lone surrogate"):
        prepare("write", {"path": "a.txt", "content": "ok \ud800 bad"}, ctx)


# --- edit -------------------------------------------------------------------------------------


def test_edit_replaces_one_occurrence(ctx: ToolContext) -> None:
    target = ctx.workspace / "a.py"
    target.write_bytes(b"x = 1\r\ny = 2\r\n")
    prepared = prepare("edit", {"path": "a.py", "old_string": "y = 2", "new_string": "y = 3"}, ctx)
    assert prepared.summary == "edit a.py: replace 1 occurrence"
    assert prepared.snapshot is not None and prepared.snapshot.size == 14
    assert execute(prepared, ctx).output == "edited a.py: replaced 1 occurrence"
    assert target.read_bytes() == b"x = 1\r\ny = 3\r\n"  # the rest is byte for byte unchanged


def test_edit_ambiguous_and_replace_all(ctx: ToolContext) -> None:
    target = ctx.workspace / "a.txt"
    target.write_text("foo foo foo\n")
    with pytest.raises(ToolError, match=r"edit: a.txt: old_string occurs 3 times"):
        prepare("edit", {"path": "a.txt", "old_string": "foo", "new_string": "bar"}, ctx)
    prepared = prepare("edit", {"path": "a.txt", "old_string": "foo", "new_string": "bar", "replace_all": True}, ctx)
    assert prepared.summary == "edit a.txt: replace 3 occurrences"
    execute(prepared, ctx)
    assert target.read_text() == "bar bar bar\n"


def test_edit_not_found_empty_and_noop(ctx: ToolContext) -> None:
    (ctx.workspace / "a.txt").write_text("hello\n")
    with pytest.raises(ToolError, match=r"edit: a.txt: old_string not found"):
        prepare("edit", {"path": "a.txt", "old_string": "bye", "new_string": "x"}, ctx)
    with pytest.raises(ToolError, match="old_string is empty"):
        prepare("edit", {"path": "a.txt", "old_string": "", "new_string": "x"}, ctx)
    with pytest.raises(ToolError, match="are the same"):
        prepare("edit", {"path": "a.txt", "old_string": "hello", "new_string": "hello"}, ctx)
    with pytest.raises(ToolError, match=r"edit: missing.txt: no such file"):
        prepare("edit", {"path": "missing.txt", "old_string": "a", "new_string": "b"}, ctx)
    with pytest.raises(ToolError, match="must be true or false"):
        prepare("edit", {"path": "a.txt", "old_string": "h", "new_string": "j", "replace_all": "yes"}, ctx)


def test_edit_refuses_binary(ctx: ToolContext) -> None:
    (ctx.workspace / "b.bin").write_bytes(b"ab\x00cd")
    with pytest.raises(ToolError, match=r"edit: b.bin: binary file"):
        prepare("edit", {"path": "b.bin", "old_string": "ab", "new_string": "x"}, ctx)


def test_edit_snapshot_race_refuses(ctx: ToolContext) -> None:
    target = ctx.workspace / "race.py"
    target.write_text("value = 1\n")
    prepared = prepare("edit", {"path": "race.py", "old_string": "value = 1", "new_string": "value = 2"}, ctx)
    # Someone else changes the file while the user looks at the approval prompt.
    target.write_text("value = 1\nextra = True\n")
    with pytest.raises(
        ToolError, match=r"edit: race.py: changed on disk since it was shown for approval; read it again"
    ):
        execute(prepared, ctx)
    assert target.read_text() == "value = 1\nextra = True\n"


def test_edit_snapshot_race_deleted_file(ctx: ToolContext) -> None:
    target = ctx.workspace / "gone.txt"
    target.write_text("a\n")
    prepared = prepare("edit", {"path": "gone.txt", "old_string": "a", "new_string": "b"}, ctx)
    target.unlink()
    with pytest.raises(ToolError, match="changed on disk"):
        execute(prepared, ctx)
    assert not target.exists()


def test_edit_same_bytes_touched_is_allowed(ctx: ToolContext) -> None:
    target = ctx.workspace / "t.txt"
    target.write_text("a\n")
    prepared = prepare("edit", {"path": "t.txt", "old_string": "a", "new_string": "b"}, ctx)
    os.utime(target, ns=(1, 1))
    execute(prepared, ctx)
    assert target.read_text() == "b\n"


def test_edit_keeps_mode(ctx: ToolContext) -> None:
    target = ctx.workspace / "x.sh"
    target.write_text("echo a\n")
    target.chmod(0o700)
    run("edit", {"path": "x.sh", "old_string": "a", "new_string": "b"}, ctx)
    assert stat.S_IMODE(target.stat().st_mode) == 0o700


def test_edit_non_utf8_file_keeps_other_bytes(ctx: ToolContext) -> None:
    target = ctx.workspace / "l1.txt"
    target.write_bytes(b"caf\xe9 = 1\n")
    run("edit", {"path": "l1.txt", "old_string": "= 1", "new_string": "= 2"}, ctx)
    assert target.read_bytes() == b"caf\xe9 = 2\n"


# --- names and contents with lone surrogates --------------------------------------------------


def test_undecodable_file_name_round_trips(ctx: ToolContext) -> None:
    raw = os.fsencode(str(ctx.workspace)) + b"/bad\xff.txt"
    with open(raw, "wb") as handle:
        handle.write(b"data\n")
    name = os.fsdecode(b"bad\xff.txt")  # 'bad\udcff.txt'
    out = run("read", {"path": name}, ctx)
    assert out == "     1\tdata"
    prepared = prepare("write", {"path": name, "content": "new"}, ctx)
    assert "bad\\xff.txt" in prepared.summary
    prepared.summary.encode("utf-8")


def test_path_with_unencodable_surrogate(ctx: ToolContext) -> None:
    with pytest.raises(ToolError, match="not valid Unicode"):
        prepare("read", {"path": "a\ud800b"}, ctx)


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=30), st.text(max_size=30))
def test_edit_arguments_never_crash(old: str, new: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        ctx = ToolContext(Path(folder))
        (ctx.workspace / "f.txt").write_text("hello world\n", encoding="utf-8")
        try:
            result = run("edit", {"path": "f.txt", "old_string": old, "new_string": new}, ctx)
        except ToolError as exc:
            str(exc).encode("utf-8")
        else:
            result.encode("utf-8")
