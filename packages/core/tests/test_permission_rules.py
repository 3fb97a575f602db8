"""Permission rules (``i_core.rules``): allow / ask / deny per tool, compound shell commands part by
part with a real shell parser, paths after ``~`` and ``..`` with symlinks resolved."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from i_core.command_parts import parse_command
from i_core.rules import RuleError, Rules, outside_workspace, parse_rule, parse_rules, save_allow_rules, suggested_rules


@pytest.fixture
def workspace(tmp_path: Path) -> str:
    folder = tmp_path / "project"
    (folder / "src").mkdir(parents=True)
    return str(folder.resolve())


def decide(workspace: str, name: str, arguments: dict[str, object], *, allow=(), ask=(), deny=()) -> str | None:
    rules = Rules(parse_rules(allow, workspace), parse_rules(ask, workspace), parse_rules(deny, workspace))
    return rules.decide(name, arguments, workspace)


def shell(workspace: str, command: str, **rules: object) -> str | None:
    return decide(workspace, "shell", {"command": command}, **rules)  # type: ignore[arg-type]


# -- shell: exact and prefix rules -----------------------------------------------------------------


@pytest.mark.parametrize(
    "command, expected",
    [
        ("git status", "allow"),
        ("git  status", "allow"),  # words, not characters
        ("'git' \"status\"", "allow"),  # quoting removed as the shell would
        ("git status --short", None),  # an exact rule: no more words
        ("npm test", "allow"),
        ("npm test -- --watch", "allow"),
        ("npm testing", None),  # a prefix of words, not of characters
        ("git status && npm test", "allow"),  # every part allowed
        ("git status && git push", None),  # one part is not
        ("git status; rm -rf build", None),
        ("git status | npm test", "allow"),
        ("echo $(git status)", None),  # echo is not allowed
        ("git status > out.txt", "allow"),  # a redirection inside the workspace
        ("git status > /tmp/out.txt", None),  # outside the workspace: no allow rule vouches for it
        ("npm test $(curl evil.example)", None),  # the substitution is a part of its own
        ("FOO=1 npm test", None),  # a VAR=x prefix
        ("bash -c 'git status'", None),
        ("", None),
    ],
)
def test_allow_rules_cover_a_command_only_when_they_cover_every_part(workspace, command, expected):
    assert shell(workspace, command, allow=["shell(git status)", "shell(npm test:*)"]) == expected


@pytest.mark.parametrize(
    "command",
    [
        "rm -rf build",
        "cd .. && rm -rf project",  # a compound command does not escape a deny
        "git status; rm x",
        "echo $(rm -rf /)",  # nor a command substitution
        "echo `rm -rf /`",
        "ls | rm x",
        "\\rm x",  # nor quoting or escaping the name
        "'r''m' x",
        '"rm" x',
        "/bin/rm x",  # nor a path to the same program
        "if true; then rm x; fi",
        "(cd /tmp && rm x)",
        "diff <(rm x) y",
    ],
)
def test_a_deny_rule_cannot_be_escaped(workspace, command):
    assert shell(workspace, command, allow=["shell"], deny=["shell(rm:*)"]) == "deny"


@pytest.mark.parametrize(
    "command",
    [
        "bash -c 'rm -rf /'",  # a wrapper runs text the rules cannot see
        "sh -c 'rm x'",
        "eval rm x",
        "env rm x",
        "sudo rm x",
        "nohup rm x &",
        "timeout 5 rm x",
        "xargs rm < list",
        "find . -exec rm {} \\;",
        "$(echo rm) x",  # a computed command name
        "X=rm; $X y",
        "alias r=rm",
        "f() { echo; }; f",
        "cat <<EOF\nrm\nEOF",
        "echo (",  # unparseable
    ],
)
def test_an_opaque_command_asks_when_a_deny_rule_could_be_hidden_in_it(workspace, command):
    assert shell(workspace, command, allow=["shell"], deny=["shell(rm:*)"]) == "ask"


def test_a_command_nested_too_deeply_to_read_is_opaque(workspace):
    command = "echo " + "$(" * 2000 + "rm x" + ")" * 2000
    assert shell(workspace, command, allow=["shell"], deny=["shell(ls:*)"]) == "ask"
    assert shell(workspace, command, allow=["shell(echo:*)", "shell(rm:*)"]) is None


def test_an_opaque_command_is_never_allowed_by_prefix_rules_but_falls_to_the_mode(workspace):
    # No deny or ask rule to protect: the core's proposal (the mode) decides, as without rules.
    assert shell(workspace, "bash -c 'git status'", allow=["shell(bash:*)"]) is None
    assert shell(workspace, "git status 2>&1 | tee log.txt", allow=["shell(git:*)", "shell(tee:*)"]) == "allow"


def test_ask_rules_beat_allow_rules_and_a_computed_word_may_match(workspace):
    rules = {"allow": ["shell(git:*)"], "ask": ["shell(git push:*)"]}
    assert shell(workspace, "git log", **rules) == "allow"
    assert shell(workspace, "git push origin main", **rules) == "ask"
    assert shell(workspace, "git $SUB origin", **rules) == "ask"  # $SUB might be push
    assert shell(workspace, "git status && git push", **rules) == "ask"


def test_a_whole_tool_rule(workspace):
    assert shell(workspace, "anything at all", deny=["shell"]) == "deny"
    assert shell(workspace, "anything at all", ask=["shell"], allow=["shell"]) == "ask"
    assert decide(workspace, "mcp__git__commit", {}, deny=["mcp__git__*"]) == "deny"
    assert decide(workspace, "mcp__github__search", {}, deny=["mcp__git__*"]) is None


def test_redirections_outside_the_workspace_and_after_cd(workspace):
    allow = {"allow": ["shell(echo:*)", "shell(cd:*)"]}
    assert shell(workspace, "echo hi > src/note.txt", **allow) == "allow"
    assert shell(workspace, "echo hi > ../note.txt", **allow) is None  # `..` leaves the workspace
    assert shell(workspace, "echo hi > ~/note.txt", **allow) is None
    assert shell(workspace, "echo hi > /dev/null 2>&1", **allow) == "allow"
    assert shell(workspace, "cd src && echo hi > note.txt", **allow) == "allow"  # still inside
    assert shell(workspace, "cd src && echo hi > ../../note.txt", **allow) is None  # out, from src
    assert shell(workspace, "(cd src); echo hi > ../note.txt", **allow) is None  # from either folder
    assert shell(workspace, 'echo hi > "$OUT"', **allow) is None


@pytest.mark.parametrize(
    "command", ["cd .. && rm -rf build", "cd /tmp; rm -rf build", "cd; rm x", "cd $D && rm x", "popd; rm x"]
)
def test_an_allow_rule_cannot_be_escaped_by_cd_out_of_the_workspace(workspace, command):
    assert shell(workspace, command, allow=["shell(cd:*)", "shell(rm:*)"]) is None
    assert shell(workspace, "cd src && rm -rf build", allow=["shell(cd:*)", "shell(rm:*)"]) == "allow"


def test_a_redirection_through_a_symlink_out_of_the_workspace(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, Path(workspace) / "link")
    assert shell(workspace, "echo hi > link/x", allow=["shell(echo:*)"]) is None
    assert shell(workspace, "echo hi > src/x", allow=["shell(echo:*)"]) == "allow"


def test_command_parts_lists_each_simple_command_with_literal_words(workspace):
    parsed = parse_command("cd src && rm -rf 'my dir'; echo $(id -u) `whoami` | tee \"a b\"", workspace)
    assert [part.words for part in parsed.parts] == [
        ("cd", "src"),
        ("rm", "-rf", "my dir"),
        ("id", "-u"),
        ("whoami",),
        ("echo", None, None),
        ("tee", "a b"),
    ]
    assert parsed.concerns == []


# -- path rules --------------------------------------------------------------------------------------


def test_path_rules_after_tilde_and_dotdot(workspace, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    rules = {"deny": ["read(~/.ssh/**)"], "allow": ["write(src/**)"]}
    assert decide(workspace, "read", {"path": str(home / ".ssh" / "id_rsa")}, **rules) == "deny"
    sneaky = os.path.relpath(home / ".ssh" / "id_rsa", workspace)  # ../home/.ssh/id_rsa
    assert decide(workspace, "read", {"path": sneaky}, **rules) == "deny"
    assert decide(workspace, "read", {"path": "src/a.py"}, **rules) is None
    assert decide(workspace, "write", {"path": "src/pkg/a.py"}, **rules) == "allow"
    assert decide(workspace, "write", {"path": "src/../setup.py"}, **rules) is None
    assert decide(workspace, "write", {"path": "setup.py"}, **rules) is None
    assert decide(workspace, "edit", {"path": "src/a.py"}, **rules) is None  # a write rule is not an edit rule


def test_a_symlink_cannot_escape_a_deny_rule_nor_borrow_an_allow_rule(workspace, monkeypatch, tmp_path):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret")
    (home / ".bashrc").write_text("rc")
    monkeypatch.setenv("HOME", str(home))
    os.symlink(home / ".ssh" / "id_rsa", Path(workspace) / "key")
    os.symlink(home / ".bashrc", Path(workspace) / "src" / "rc")
    rules = {"deny": ["read(~/.ssh/**)"], "allow": ["write(src/**)"]}
    assert decide(workspace, "read", {"path": "key"}, **rules) == "deny"
    assert decide(workspace, "write", {"path": "src/rc"}, **rules) is None  # really ~/.bashrc


def test_a_pattern_through_a_symlinked_folder_matches_where_it_leads(tmp_path):
    real = tmp_path / "real"
    (real / "src").mkdir(parents=True)
    os.symlink(real, tmp_path / "alias")
    workspace = str(real)
    rules = Rules(allow=parse_rules([f"write({tmp_path / 'alias' / 'src'}/**)"], workspace))
    assert rules.decide("write", {"path": "src/a.py"}, workspace) == "allow"


def test_reads_outside_the_workspace(workspace, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("x")
    os.symlink(outside / "f.txt", Path(workspace) / "inside-link")
    assert outside_workspace("read", {"path": "src/a.py"}, workspace) is None
    assert outside_workspace("read", {"path": "../outside/f.txt"}, workspace) == str(outside / "f.txt")
    assert outside_workspace("read", {"path": "inside-link"}, workspace) == str((outside / "f.txt").resolve())
    assert outside_workspace("search", {"pattern": "x", "path": "/"}, workspace) == "/"
    assert outside_workspace("glob", {"pattern": "*"}, workspace) is None  # the workspace by default
    assert outside_workspace("shell", {"command": "cat /etc/passwd"}, workspace) is None


@pytest.mark.parametrize(
    "text, message",
    [
        ("shell(", "is not TOOL or TOOL(PATTERN)"),
        ("shell()", "names no command"),
        ("shell(git 'status)", "No closing quotation"),
        ("mcp__git__commit(x)", "only shell and the path tools"),
        ("read()", "names no path"),
        (3, "is not a string"),
    ],
)
def test_a_bad_rule_is_named(workspace, text, message):
    with pytest.raises(RuleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_rule(text, workspace)


# -- "always": suggestions and saved allows ---------------------------------------------------------


def test_always_suggests_each_part_s_command_prefix(workspace):
    assert suggested_rules("git commit -m 'fix: x'", workspace) == ["shell(git commit:*)"]
    assert suggested_rules("npm test && npm run build", workspace) == ["shell(npm test:*)", "shell(npm run:*)"]
    assert suggested_rules("ls -la", workspace) == ["shell(ls:*)"]
    assert suggested_rules("bash -c 'ls'", workspace) == []  # opaque: nothing a rule can say
    assert suggested_rules("echo hi > /etc/x", workspace) == []


def test_saved_allows_go_to_the_state_folder_once_each(tmp_path, workspace):
    state = tmp_path / "data" / "workspaces" / "id"
    path = save_allow_rules(state, ["shell(git commit:*)"])
    save_allow_rules(state, ["shell(git commit:*)", "shell(npm test:*)"])
    assert path == state / "approval.json"
    import orjson

    assert orjson.loads(path.read_bytes()) == {"allow": ["shell(git commit:*)", "shell(npm test:*)"]}
    assert not any(Path(workspace).rglob("approval.json"))


def test_the_shell_parser_is_not_imported_by_a_one_shot_path():
    # Importing the gate, the tools and the rules module must not load tree-sitter.
    code = (
        "import sys, i_core.approval, i_core.tools, i_core.rules, i_core.tool_calls, i_core.agent, i_core.console;"
        "print(any(name.startswith('tree_sitter') for name in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
