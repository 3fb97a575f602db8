"""The bundled `skills` worker: SKILL.md parsing, discovery limits, path confinement, and the real process."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from i_core.bundled import skills
from i_core.bundled.skills import (
    MAX_DESCRIPTION_CHARS,
    MAX_FILE_BYTES,
    SkillError,
    discover,
    parse_skill_text,
    read_skill_file,
    validate_metadata,
)
from i_protocol import ErrorFrame
from i_protocol.host import WorkerProcess
from i_protocol.testing import scaled


def write_skill(
    root: Path,
    folder: str,
    name: str | None = None,
    description: str = "Does a thing.",
    body: str = "# Body\nSteps.\n",
    front: str | None = None,
) -> Path:
    path = root / folder / "SKILL.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    if front is None:
        front = f"name: {name or folder}\ndescription: {json.dumps(description)}\n"
    path.write_text(f"---\n{front}---\n{body}", encoding="utf-8")
    return path


def metadata(text: str) -> tuple[str, str]:
    return validate_metadata(parse_skill_text(text, "SKILL.md"), "SKILL.md")


# -- parser --------------------------------------------------------------------------------


def test_parse_plain_and_quoted_scalars_and_body() -> None:
    front = parse_skill_text(
        "---\nname: pdf-tools # the name\ndescription: 'It''s: for PDFs'\nlicense: \"MIT\\u00e9\"\n"
        "# a comment\n\n---\nBody line\n---\nmore\n",
        "x/SKILL.md",
    )
    assert front.fields["name"].text == "pdf-tools"
    assert front.fields["description"].text == "It's: for PDFs"
    assert front.fields["license"].text == "MITé"
    assert front.body == "Body line\n---\nmore\n"


def test_parse_crlf_and_bom() -> None:
    assert metadata("\ufeff---\r\nname: a\r\ndescription: b\r\n---\r\nbody") == ("a", "b")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: a\n", "SKILL.md:1: must start with a '---'"),
        ("---\nname: a\ndescription: b\n", "no closing '---'"),
        ("---\nname: a\nmetadata:\n  author: me\n---\n", "SKILL.md:3: 'metadata' has no value"),
        ("---\nname: a\ndescription: b\n  continued\n---\n", "SKILL.md:4: indented line"),
        ("---\nname: a\ndescription: >\n  folded\n---\n", "SKILL.md:3: 'description': complex YAML"),
        ("---\nname: [a, b]\n---\n", "SKILL.md:2: 'name': complex YAML"),
        ("---\nname: &x a\n---\n", "complex YAML"),
        ("---\nname: !!str a\n---\n", "complex YAML"),
        ("---\n- a\n---\n", "SKILL.md:2: YAML lists are not supported"),
        ("---\nname: a\nname: b\n---\n", "SKILL.md:3: duplicate key 'name' (first on line 2)"),
        ('---\nname: "a\n---\n', "SKILL.md:2: unterminated double-quoted"),
        ("---\nname: 'a\n---\n", "unterminated single-quoted"),
        ('---\nname: "a" b\n---\n', "unexpected text after the closing quote"),
        ('---\nname: "\\x41"\n---\n', "unsupported escape"),
        ("---\ndescription: a: b\n---\n", "must not contain ': '"),
        ("---\njust text\n---\n", "SKILL.md:2: expected 'key: value'"),
    ],
)
def test_parse_rejects_unsupported_yaml_naming_file_and_line(text: str, message: str) -> None:
    with pytest.raises(SkillError) as info:
        parse_skill_text(text, "SKILL.md")
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("true", "boolean"),
        ("no", "boolean"),
        ("42", "integer"),
        ("0x1f", "integer"),
        ("1.5", "float"),
        (".inf", "float"),
        ("null", "null"),
        ("~", "null"),
        ("2024-01-02", "timestamp"),
    ],
)
def test_metadata_rejects_non_string_types(value: str, kind: str) -> None:
    with pytest.raises(SkillError, match=rf"SKILL.md:2: 'name' must be a string, got {kind}"):
        metadata(f"---\nname: {value}\ndescription: ok\n---\n")
    with pytest.raises(SkillError, match=rf"SKILL.md:3: 'description' must be a string, got {kind}"):
        metadata(f"---\nname: a\ndescription: {value}\n---\n")
    # Quoting makes the same text a string.
    assert metadata(f"---\nname: a\ndescription: '{value}'\n---\n")[1] == value


def test_metadata_type_checks_known_optional_keys_and_ignores_other_scalars() -> None:
    with pytest.raises(SkillError, match="'license' must be a string, got integer"):
        metadata("---\nname: a\ndescription: b\nlicense: 3\n---\n")
    assert metadata("---\nname: a\ndescription: b\nversion: 3\n---\n") == ("a", "b")


@pytest.mark.parametrize("name", ["", "has space", "dot.name", "é", "a" * 65, "a/b"])
def test_bad_names_rejected(name: str) -> None:
    with pytest.raises(SkillError, match="must be 1-64 ASCII letters, digits"):
        metadata(f"---\nname: {json.dumps(name)}\ndescription: ok\n---\n")


def test_name_limits_accepted() -> None:
    assert metadata(f"---\nname: {'a' * 64}\ndescription: ok\n---\n")[0] == "a" * 64
    assert metadata("---\nname: A-b_9\ndescription: ok\n---\n")[0] == "A-b_9"


def test_description_limits() -> None:
    longest = "d" * MAX_DESCRIPTION_CHARS
    assert metadata(f"---\nname: a\ndescription: {longest}\n---\n")[1] == longest
    with pytest.raises(SkillError, match="description has 1025 characters; at most 1024"):
        metadata(f"---\nname: a\ndescription: {longest}d\n---\n")
    with pytest.raises(SkillError, match="description is empty"):
        metadata("---\nname: a\ndescription: ''\n---\n")
    with pytest.raises(SkillError, match="no 'description' field"):
        metadata("---\nname: a\n---\n")
    with pytest.raises(SkillError, match="no 'name' field"):
        metadata("---\ndescription: a\n---\n")


@settings(max_examples=200, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z0-9_-]{1,64}", fullmatch=True),
    description=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=200).filter(
        lambda text: text.strip() != ""
    ),
)
def test_quoted_values_round_trip(name: str, description: str) -> None:
    text = f'---\nname: "{name}"\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\nbody'
    assert metadata(text) == (name, description)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=300))
def test_parser_fails_only_with_skill_error(text: str) -> None:
    try:
        metadata("---\n" + text)
    except SkillError:
        pass


# -- discovery -----------------------------------------------------------------------------


def test_discover_valid_skills_and_reports_bad_ones(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    good = write_skill(root, "good", description="Good one")
    write_skill(root, "bad", front="name: bad skill\ndescription: x\n")
    (root / "no-skill-here").mkdir()
    (root / "notes.txt").write_text("not a skill")
    found = discover([str(root)], [])
    assert list(found.skills) == ["good"]
    assert found.skills["good"].source == str(good)
    assert found.skills["good"].description == "Good one"
    assert len(found.errors) == 1 and f"{root / 'bad' / 'SKILL.md'}:2: name 'bad skill'" in found.errors[0]


def test_missing_default_root_is_fine_missing_configured_root_is_reported(tmp_path: Path) -> None:
    found = discover([str(tmp_path / "absent")], [str(tmp_path / "also-absent")])
    assert found.skills == {}
    assert found.errors == [f"skill root {tmp_path / 'also-absent'} (skills.json) is not a folder"]


def test_at_most_100_skills_per_root(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for index in range(101):
        write_skill(root, f"s{index:03d}")
    found = discover([str(root)], [])
    assert len(found.skills) == 100
    assert "s100" not in found.skills and "s099" in found.skills
    assert len(found.errors) == 1 and "more than 100 skills" in found.errors[0]


def test_exactly_100_skills_is_no_error(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    for index in range(100):
        write_skill(root, f"s{index:03d}")
    found = discover([str(root)], [])
    assert len(found.skills) == 100 and found.errors == []


def test_at_most_1000_entries_per_root(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    write_skill(root, "real")
    for index in range(999):
        (root / f"f{index}").write_bytes(b"")
    assert list(discover([str(root)], []).skills) == ["real"]  # 1000 entries: still walked
    (root / "one-more").write_bytes(b"")
    found = discover([str(root)], [])
    assert found.skills == {}
    assert found.errors == [f"skill root {root} has more than 1000 entries; none of its skills is loaded"]


def test_skill_file_size_limit(tmp_path: Path) -> None:
    root = tmp_path / "skills"
    head = "---\nname: big\ndescription: d\n---\n"
    path = write_skill(root, "big", front="name: big\ndescription: d\n", body="")
    path.write_text(head + "x" * (MAX_FILE_BYTES - len(head)))
    assert list(discover([str(root)], []).skills) == ["big"]
    path.write_text(head + "x" * (MAX_FILE_BYTES + 1 - len(head)))
    found = discover([str(root)], [])
    assert found.skills == {}
    assert found.errors == [f"{path}: larger than the 64000-byte limit"]


def test_non_utf8_skill_reported(tmp_path: Path) -> None:
    path = write_skill(tmp_path, "latin")
    path.write_bytes(b"---\nname: latin\ndescription: caf\xe9\n---\n")
    assert discover([str(tmp_path)], []).errors == [f"{path}: not UTF-8 text"]


def test_duplicate_names_are_an_error_for_that_name_only(tmp_path: Path) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    a = write_skill(first, "x", name="same")
    b = write_skill(second, "y", name="same")
    write_skill(second, "other")
    found = discover([str(first)], [str(second)])
    assert list(found.skills) == ["other"]
    assert found.duplicates == {"same": [str(a), str(b)]}
    assert found.errors == [f"skill name 'same' is defined more than once: {a}, {b}; none is loaded"]


def test_hidden_folders_and_loose_files_are_not_skills(tmp_path: Path) -> None:
    write_skill(tmp_path, ".hidden")
    (tmp_path / "SKILL.md").write_text("---\nname: top\ndescription: d\n---\n")
    found = discover([str(tmp_path)], [])
    assert found.skills == {} and found.errors == []


def test_root_listed_twice_is_walked_once(tmp_path: Path) -> None:
    write_skill(tmp_path / "skills", "solo")
    found = discover([str(tmp_path / "skills")], [str(tmp_path / "skills"), str(tmp_path / "." / "skills")])
    assert list(found.skills) == ["solo"] and found.errors == []


def test_symlinked_skill_folder_outside_root_is_not_loaded(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write_skill(outside, "evil")
    root = tmp_path / "skills"
    root.mkdir()
    (root / "evil").symlink_to(outside / "evil", target_is_directory=True)
    write_skill(root, "inner")
    (root / "alias").symlink_to(root / "inner", target_is_directory=True)
    found = discover([str(root)], [])
    assert "evil" not in found.skills
    assert any("evil/SKILL.md: resolves outside its root" in error for error in found.errors)
    # An alias inside the root is allowed, and makes the name a duplicate.
    assert "inner" in found.duplicates


# -- skill_read confinement ----------------------------------------------------------------


@pytest.fixture
def skill(tmp_path: Path) -> skills.Skill:
    root = tmp_path / "skills"
    write_skill(root, "tool")
    folder = root / "tool"
    (folder / "scripts").mkdir()
    (folder / "scripts" / "run.sh").write_text("#!/bin/sh\necho hi\n")
    (tmp_path / "secret.txt").write_text("secret")
    (folder / "leak").symlink_to(tmp_path / "secret.txt")
    (folder / "leakdir").symlink_to(tmp_path, target_is_directory=True)
    (folder / "ok-link").symlink_to(folder / "scripts" / "run.sh")
    return discover([str(root)], []).skills["tool"]


def test_skill_read_reads_relative_files(skill: skills.Skill) -> None:
    assert read_skill_file(skill, "scripts/run.sh") == "#!/bin/sh\necho hi\n"
    assert read_skill_file(skill, "./scripts//run.sh") == "#!/bin/sh\necho hi\n"
    assert read_skill_file(skill, "ok-link") == "#!/bin/sh\necho hi\n"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("../secret.txt", "contains '..'"),
        ("scripts/../../secret.txt", "contains '..'"),
        ("scripts\\..\\..\\secret.txt", "contains '..'"),
        ("/etc/passwd", "is absolute"),
        ("\\etc\\passwd", "is absolute"),
        ("C:/Windows/win.ini", "is absolute"),
        ("leak", "resolves outside the skill's folder"),
        ("leakdir/secret.txt", "resolves outside the skill's folder"),
        ("missing.txt", "has no file 'missing.txt'"),
        ("scripts", "has no file 'scripts'"),
        ("", "path must be a non-empty string"),
        ("a\x00b", "NUL"),
    ],
)
def test_skill_read_never_escapes(skill: skills.Skill, path: str, message: str) -> None:
    with pytest.raises(SkillError, match=message.replace("(", r"\(")):
        read_skill_file(skill, path)


def test_skill_read_size_limit(skill: skills.Skill) -> None:
    big = Path(skill.folder) / "big.txt"
    big.write_bytes(b"x" * MAX_FILE_BYTES)
    assert len(read_skill_file(skill, "big.txt")) == MAX_FILE_BYTES
    big.write_bytes(b"x" * (MAX_FILE_BYTES + 1))
    with pytest.raises(SkillError, match="larger than the 64000-byte limit"):
        read_skill_file(skill, "big.txt")


# -- end to end: the real worker process ---------------------------------------------------


def worker_argv() -> list[str]:
    return [sys.executable, "-m", "i_core", "--runtime", "worker", "skills"]


@pytest.fixture
def home(tmp_path: Path) -> dict[str, Path]:
    result = {}
    for key in ("config", "data", "cache", "runtime"):
        result[key] = tmp_path / key
        result[key].mkdir()
    return result


@pytest.fixture
def spawn(home: dict[str, Path], tmp_path: Path):
    started: list[WorkerProcess] = []

    def start(*extra: str) -> WorkerProcess:
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONUTF8": "1"}
        env.update({f"I_{key.upper()}_DIR": str(path) for key, path in home.items()})
        process = WorkerProcess.spawn([*worker_argv(), *extra], env=env, cwd=str(tmp_path))
        started.append(process)
        return process

    yield start
    for process in started:
        process.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    write_skill(path / ".agents" / "skills", "alpha", description="First skill", body="Alpha body\n")
    write_skill(path / ".i" / "skills", "beta", description="Second skill", body="Beta body\n")
    (path / ".i" / "skills" / "beta" / "ref.md").write_text("reference text\n")
    return path


def turn(process: WorkerProcess, workspace: Path, data: dict[str, Any] | None = None) -> dict[str, Any]:
    return process.call("before_turn", data or {"messages": []}, context={"workspace": str(workspace)})


def tool(process: WorkerProcess, workspace: Path, tool_name: str, **arguments: Any) -> dict[str, Any]:
    return process.call("tool", {"name": tool_name, "arguments": arguments}, context={"workspace": str(workspace)})


def test_e2e_before_turn_reports_default_roots(spawn, workspace: Path) -> None:
    process = spawn()
    data = {"messages": [{"role": "user", "content": "hi"}], "context": {"memory": {"kind": "memory"}}, "x": 1}
    result = turn(process, workspace, data)
    assert result["messages"] == data["messages"] and result["x"] == 1
    assert result["context"]["memory"] == {"kind": "memory"}
    entries = {
        "alpha": {"description": "First skill", "source": str(workspace / ".agents/skills/alpha/SKILL.md")},
        "beta": {"description": "Second skill", "source": str(workspace / ".i/skills/beta/SKILL.md")},
    }
    digest = hashlib.sha256(orjson.dumps(entries, option=orjson.OPT_SORT_KEYS)).hexdigest()
    assert result["context"]["skills"] == {
        "kind": "skills",
        "entries": entries,
        "revision": "sha256:" + digest,
        "errors": [],
    }
    # Only name, description and source are injected, never the body.
    assert "Alpha body" not in json.dumps(result)


def test_e2e_revision_follows_content(spawn, workspace: Path) -> None:
    process = spawn()
    first = turn(process, workspace)["context"]["skills"]["revision"]
    assert turn(process, workspace)["context"]["skills"]["revision"] == first
    write_skill(workspace / ".i" / "skills", "beta", description="Changed")
    assert turn(process, workspace)["context"]["skills"]["revision"] != first


def test_e2e_external_roots_only_when_configured(spawn, workspace: Path, home: dict[str, Path], tmp_path: Path) -> None:
    write_skill(tmp_path / "shared" / "skills", "gamma")
    write_skill(tmp_path / "abs", "delta")
    process = spawn()
    assert sorted(turn(process, workspace)["context"]["skills"]["entries"]) == ["alpha", "beta"]
    (home["config"] / "skills.json").write_text(json.dumps({"roots": ["../shared/skills", str(tmp_path / "abs")]}))
    entries = turn(process, workspace)["context"]["skills"]["entries"]
    assert sorted(entries) == ["alpha", "beta", "delta", "gamma"]
    assert entries["gamma"]["source"] == str(tmp_path / "shared/skills/gamma/SKILL.md")


def test_e2e_explicit_config_file(spawn, workspace: Path, tmp_path: Path) -> None:
    write_skill(tmp_path / "elsewhere" / "roots" / "mine", "epsilon")
    config = tmp_path / "elsewhere" / "my-skills.json"
    config.write_text(json.dumps({"roots": ["roots/mine"]}))
    process = spawn("--config", str(config))
    assert "epsilon" in turn(process, workspace)["context"]["skills"]["entries"]


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"roots": "x"}, "roots must be an array"),
        ({"roots": [""]}, "roots must be an array"),
        ({"root": []}, "unknown field(s) root; known fields: roots"),
    ],
)
def test_e2e_bad_config_fails_the_call(
    spawn, workspace: Path, home: dict[str, Path], config: Any, message: str
) -> None:
    (home["config"] / "skills.json").write_text(json.dumps(config))
    process = spawn()
    with pytest.raises(ErrorFrame) as info:
        turn(process, workspace)
    assert message in str(info.value) and "skills.json" in str(info.value)


def test_e2e_bad_skill_listed_while_good_ones_load(spawn, workspace: Path) -> None:
    bad = write_skill(workspace / ".i" / "skills", "broken", front="name: broken\ndescription: yes\n")
    context = turn(spawn(), workspace)["context"]["skills"]
    assert sorted(context["entries"]) == ["alpha", "beta"]
    assert context["errors"] == [
        f"{bad}:3: 'description' must be a string, got boolean 'yes' (quote it to make it a string)"
    ]


def test_e2e_duplicate_name(spawn, workspace: Path) -> None:
    write_skill(workspace / ".i" / "skills", "alpha-copy", name="alpha")
    process = spawn()
    context = turn(process, workspace)["context"]["skills"]
    assert sorted(context["entries"]) == ["beta"]
    assert "skill name 'alpha' is defined more than once" in context["errors"][0]
    with pytest.raises(ErrorFrame, match="'alpha' is defined more than once"):
        tool(process, workspace, "skill_load", name="alpha")


def raw_tool(
    process: WorkerProcess, workspace: Path, request_id: int, tool_name: str, **arguments: Any
) -> dict[str, Any]:
    """One tool frame through ``call_frame``, which (unlike ``call``) keeps using the worker after an error."""
    frame = {
        "id": request_id,
        "event": "tool",
        "workspace": str(workspace),
        "data": {"name": tool_name, "arguments": arguments},
    }
    answer = orjson.loads(process.call_frame(orjson.dumps(frame) + b"\n"))
    assert answer["id"] == request_id
    return answer


def test_e2e_skill_load_and_read(spawn, workspace: Path) -> None:
    process = spawn()
    assert raw_tool(process, workspace, 1, "skill_load", name="alpha") == {"id": 1, "data": {"output": "Alpha body\n"}}
    assert raw_tool(process, workspace, 2, "skill_read", name="beta", path="ref.md")["data"] == {
        "output": "reference text\n"
    }
    errors = [
        (("skill_load",), {"name": "nope"}, "no skill named 'nope'; known skills: alpha, beta"),
        (("skill_read",), {"name": "beta", "path": "../../../../etc/passwd"}, "contains '..'"),
        (("skill_read",), {"name": "beta", "path": str(workspace / ".i/skills/beta/ref.md")}, "is absolute"),
        (("skill_read",), {"name": "beta"}, "path must be a non-empty string"),
        (("skill_load",), {"name": 3}, "name must be a non-empty string"),
    ]
    for request_id, ((tool_name,), arguments, message) in enumerate(errors, start=3):
        answer = raw_tool(process, workspace, request_id, tool_name, **arguments)
        assert message in answer["error"], answer
    # The worker keeps serving after every error above.
    assert tool(process, workspace, "skill_load", name="beta") == {"output": "Beta body\n"}


def test_e2e_symlink_escape_in_skill_read(spawn, workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("top secret")
    (workspace / ".i/skills/beta/notes").symlink_to(tmp_path / "secret.txt")
    with pytest.raises(ErrorFrame, match="resolves outside the skill's folder"):
        tool(spawn(), workspace, "skill_read", name="beta", path="notes")


def test_e2e_scripts_are_read_never_run(spawn, workspace: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = workspace / ".i/skills/beta/run.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\n")
    script.chmod(0o755)
    process = spawn()
    assert tool(process, workspace, "skill_read", name="beta", path="run.sh")["output"].startswith("#!/bin/sh")
    turn(process, workspace)
    assert not marker.exists()


def test_e2e_no_workspace_means_no_default_roots(spawn, workspace: Path) -> None:
    result = spawn().call("before_turn", {"messages": []})
    assert result["context"]["skills"]["entries"] == {}


def test_e2e_version_and_help() -> None:
    import subprocess

    run = subprocess.run([*worker_argv(), "--version"], capture_output=True, text=True, timeout=scaled(30))
    assert run.returncode == 0 and run.stdout.startswith("i-core skills ")
    run = subprocess.run([*worker_argv(), "--help"], capture_output=True, text=True, timeout=scaled(30))
    assert "skill_load" in run.stdout and "skill_read" in run.stdout and "before_turn" in run.stdout
