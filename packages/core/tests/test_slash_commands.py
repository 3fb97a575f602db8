"""The console's slash commands without a terminal: the parser's rules, the registry ``/help``
lists, custom command files, multi-line reading, config.json's ``prices`` and ``models``, and
which config ``/model NAME`` switches to."""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest

from i_core.commands import Command, Invoke, Registry, Text, Unknown
from i_core.console_commands import chosen_config
from i_core.custom_commands import command_folders, load_commands
from i_core.errors import ConfigError
from i_core.line_input import read_request
from i_core.prices import parse_prices
from i_core.settings import parse_api_config


def _registry() -> Registry:
    registry = Registry()
    for name in ("help", "exit", "compact", "model", "status"):
        registry.add(
            Command(name, f"/{name}", f"{name} things", lambda args: args, aliases=("quit",) if name == "exit" else ())
        )
    return registry


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("fix the bug", Text("fix the bug")),
        ("/usr/lib/x is broken", Text("/usr/lib/x is broken")),
        ("/etc/hosts", Text("/etc/hosts")),
        ("//compact", Text("/compact")),
        ("//usr/lib/x", Text("/usr/lib/x")),
        ("// a literal slash", Text("/ a literal slash")),
    ],
)
def test_text_lines_are_sent_as_text(line, expected):
    assert _registry().parse(line) == expected


@pytest.mark.parametrize(
    ("line", "name", "args"),
    [
        ("/help", "help", ""),
        ("/compact the parser tests", "compact", "the parser tests"),
        ("/compact\tthe parser", "compact", "the parser"),
        ("/compact   spaced  ", "compact", "spaced"),
        ("/compact\nsecond line", "compact", "second line"),
        ("/quit", "exit", ""),
        ("/model gpt-5 responses", "model", "gpt-5 responses"),
    ],
)
def test_a_registered_name_then_a_space_or_the_end_is_a_command(line, name, args):
    parsed = _registry().parse(line)
    assert isinstance(parsed, Invoke)
    assert (parsed.command.name, parsed.args) == (name, args)


def test_a_name_followed_by_other_characters_is_not_that_command():
    parsed = _registry().parse("/helpme")
    assert isinstance(parsed, Unknown) and parsed.word == "/helpme"
    assert "did you mean /help?" in parsed.message


def test_an_unknown_word_is_refused_in_one_line_with_a_suggestion():
    parsed = _registry().parse("/exti now")
    assert isinstance(parsed, Unknown)
    assert parsed.message.startswith("unknown command /exti; did you mean /exit?")
    assert "//" in parsed.message and "nothing was sent" in parsed.message
    assert "\n" not in parsed.message


def test_an_unknown_word_far_from_every_name_gets_no_suggestion():
    parsed = _registry().parse("/zzzzqqq")
    assert isinstance(parsed, Unknown) and "did you mean" not in parsed.message


def test_a_lone_slash_is_refused():
    parsed = _registry().parse("/")
    assert isinstance(parsed, Unknown) and "lone /" in parsed.message


def test_names_are_case_sensitive_and_the_suggestion_says_the_right_case():
    parsed = _registry().parse("/HELP")
    assert isinstance(parsed, Unknown) and "did you mean /help?" in parsed.message


def test_the_registry_refuses_a_second_command_of_a_name_and_help_lists_every_command():
    registry = _registry()
    with pytest.raises(ValueError, match="/quit is already a command"):
        registry.add(Command("quit", "/quit", "x", lambda a: a))
    registry.add(Command("review", "/review", "review a change", lambda a: a, origin="project"))
    lines = registry.help_lines()
    assert [line.split()[0] for line in lines] == ["/help", "/exit", "/compact", "/model", "/status", "/review"]
    assert "(also /quit)" in lines[1] and lines[-1].endswith("[project]")


# -- multi-line input --------------------------------------------------------------------------


def _asker(lines: list[str]):
    prompts: list[str] = []

    def ask(prompt: str) -> str:
        prompts.append(prompt)
        if not lines:
            raise EOFError
        return lines.pop(0)

    return ask, prompts


def test_a_trailing_backslash_continues_the_request_on_the_next_line():
    ask, prompts = _asker(["first \\", "second\\", "third", "next request"])
    assert read_request(ask) == "first \nsecond\nthird"
    assert prompts == ["> ", "… ", "… "]


def test_a_line_without_a_trailing_backslash_is_one_request_and_a_double_backslash_stays():
    ask, _ = _asker(["C:\\temp\\\\", "next"])
    assert read_request(ask) == "C:\\temp\\\\"
    ask, _ = _asker(["dangling \\"])
    assert read_request(ask) == "dangling "


# -- custom commands ---------------------------------------------------------------------------


def test_custom_commands_expand_arguments_and_the_project_wins(tmp_path: Path):
    project, config = tmp_path / "project", tmp_path / "config"
    (project / ".i" / "commands").mkdir(parents=True)
    (config / "commands").mkdir(parents=True)
    (project / ".i" / "commands" / "review.md").write_text(
        "---\ndescription: Review a change\nargument-hint: [file]\nmodel: ignored\n---\nReview $ARGUMENTS carefully.\n"
    )
    (config / "commands" / "review.md").write_text("the user's review, shadowed\n")
    (config / "commands" / "swap.md").write_text("# Swap two things\nPut $2 before $1; $3 is empty.\n")
    (config / "commands" / "plain.md").write_text("Explain the build.\n")
    (config / "commands" / "help.md").write_text("shadowing a built-in\n")
    (config / "commands" / "bad name.md").write_text("x\n")
    (config / "commands" / "empty.md").write_text("---\ndescription: nothing\n---\n\n")
    commands, problems = load_commands(command_folders(str(project), config), {"help", "exit"})
    by_name = {c.name: c for c in commands}
    assert sorted(by_name) == ["plain", "review", "swap"]
    review = by_name["review"]
    assert (review.origin, review.description, review.argument_hint) == ("project", "Review a change", "[file]")
    assert review.expand("src/app.py") == "Review src/app.py carefully."
    assert by_name["swap"].description == "Swap two things"
    assert by_name["swap"].expand("a b").endswith("Put b before a;  is empty.")
    assert by_name["plain"].expand("") == "Explain the build."
    assert by_name["plain"].expand("only the tests") == "Explain the build.\n\nonly the tests"
    assert len(problems) == 3
    assert any("help.md: /help is a built-in command" in p for p in problems)
    assert any("bad name.md: not a command name" in p for p in problems)
    assert any("empty.md: has no text to send" in p for p in problems)


def test_custom_command_files_that_are_too_large_or_not_utf8_are_left_out(tmp_path: Path):
    folder = tmp_path / "commands"
    folder.mkdir()
    (folder / "big.md").write_bytes(b"x" * (64 * 1024 + 1))
    (folder / "latin.md").write_bytes(b"caf\xe9\n")
    os.mkfifo(folder / "pipe.md")  # never waited on: only a regular file is read
    commands, problems = load_commands([("user", folder)], set())
    assert commands == []
    assert any("larger than 64 KiB" in p for p in problems) and any("not UTF-8" in p for p in problems)
    assert any("pipe.md: cannot be read: " in p and "not a regular file" in p for p in problems)


def test_no_command_folder_is_no_command_and_no_problem(tmp_path: Path):
    assert load_commands(command_folders(str(tmp_path), tmp_path / "none"), set()) == ([], [])


# -- prices --------------------------------------------------------------------------------------


def test_prices_are_validated_field_by_field():
    prices = parse_prices({"input_per_mtok": 3, "output_per_mtok": 15.0, "cache_read_per_mtok": 0.3}, "c.json")
    assert prices is not None and prices.currency == "USD" and prices.cache_write_per_mtok is None
    assert parse_prices(None, "c.json") is None
    for raw, message in [
        ({"output_per_mtok": 1}, "prices.input_per_mtok is required"),
        ({"input_per_mtok": 1}, "prices.output_per_mtok is required"),
        ({"input_per_mtok": -1, "output_per_mtok": 1}, "prices.input_per_mtok must be a number from 0 to 100000"),
        ({"input_per_mtok": True, "output_per_mtok": 1}, "prices.input_per_mtok must be a number"),
        ({"input_per_mtok": "3", "output_per_mtok": 1}, "prices.input_per_mtok must be a number"),
        ({"input_per_mtok": 1, "output_per_mtok": math.inf}, "prices.output_per_mtok must be a number"),
        ({"input_per_mtok": 1, "output_per_mtok": 1e6}, "from 0 to 100000"),
        ({"input_per_mtok": 1, "output_per_mtok": 1, "input": 3}, "unknown field(s): input"),
        (
            {"input_per_mtok": 1, "output_per_mtok": 1, "currency": "US dollars"},
            "prices.currency must be a short label",
        ),
        ([1, 2], "prices must be an object"),
    ]:
        with pytest.raises(ConfigError, match=r"^c\.json: ") as caught:
            parse_prices(raw, "c.json")
        assert message in str(caught.value)


def test_cost_charges_cached_input_at_its_own_price_and_needs_known_counts():
    prices = parse_prices(
        {"input_per_mtok": 2, "output_per_mtok": 10, "cache_read_per_mtok": 0.5, "currency": "EUR"}, "c"
    )
    assert prices is not None
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000, "cache_read_tokens": 400_000}
    assert prices.cost(usage) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.1 * 10)
    assert prices.cost({"input_tokens": 10}) is None
    written = {"input_tokens": 1_000_000, "output_tokens": 0, "cache_creation_tokens": 1_000_000}
    assert prices.cost(written) == pytest.approx(2.0)  # no cache write price: the input price


def test_config_json_checks_its_prices():
    raw = {"base_url": "http://127.0.0.1:1/v1", "model": "m", "prices": {"input_per_mtok": 1}}
    with pytest.raises(ConfigError, match=r"config\.json: prices\.output_per_mtok is required"):
        parse_api_config(raw)


# -- models and /model ---------------------------------------------------------------------------


def _config(**extra):
    raw = {
        "base_url": "http://127.0.0.1:1/v1",
        "model": "small",
        "budget": {"context_window": 8000, "threshold": 0.7},
        "prices": {"input_per_mtok": 1, "output_per_mtok": 2},
        **extra,
    }
    return parse_api_config(raw)


def test_models_entries_are_whole_configs_over_the_top_level():
    config = _config(
        models={
            "big": {"model": "big-2", "protocol": "anthropic", "budget": {"context_window": 200000}},
            "small-again": {"model": "small", "max_tokens": 100},
            "gpt-5": {"prices": {"input_per_mtok": 1.25, "output_per_mtok": 10}},
        }
    )
    big = config.models["big"]
    assert (big.model, big.protocol, big.budget) == ("big-2", "anthropic", {"context_window": 200000, "threshold": 0.7})
    assert big.prices is None  # another model: the top level's prices are not its own
    assert config.models["small-again"].prices == config.prices
    assert config.models["gpt-5"].model == "gpt-5" and config.models["gpt-5"].prices.input_per_mtok == 1.25
    assert big.models == {}


@pytest.mark.parametrize(
    ("models", "message"),
    [
        ({"x": {"provider": {"exec": ["p"]}}}, "models.x: field(s) provider cannot be set per model"),
        ({"x": {"max_tokens": 0}}, "models.x: max_tokens must be an integer from 1 to"),
        ({"x": {"api_key": "sk-123"}}, "models.x: field(s) api_key cannot be set per model"),
        ({"x y": {}}, "is not a name"),
        ({"x": "big"}, "models.x must be an object"),
        (["x"], "models must be an object"),
    ],
)
def test_models_entries_are_validated(models, message):
    with pytest.raises(ConfigError) as caught:
        _config(models=models)
    assert message in str(caught.value)
    assert "sk-123" not in str(caught.value)


def test_model_names_switch_to_an_entry_the_top_level_or_another_model_on_the_same_server():
    root = _config(models={"big": {"model": "big-2", "budget": {"context_window": 100000}}})
    big = chosen_config(root, root, "big", None)
    assert (big.model, big.budget["context_window"]) == ("big-2", 100000)
    back = chosen_config(root, big, "small", None)
    assert (back.model, back.prices, back.models) == ("small", root.prices, {})
    other = chosen_config(root, root, "tiny-1", "responses")
    assert (other.model, other.protocol, other.prices, other.budget) == ("tiny-1", "responses", None, root.budget)


def test_models_entries_keep_the_top_level_provider_resolved_against_config_json_s_folder(tmp_path: Path):
    (tmp_path / "providers").mkdir()
    script = tmp_path / "providers" / "p.py"
    script.write_text("")
    raw = {
        "base_url": "http://127.0.0.1:1/v1",
        "model": "m",
        "provider": {"exec": [sys.executable, "p.py"], "cwd": "providers"},
        "models": {"vendor/other-model": {}},
    }
    config = parse_api_config(raw, str(tmp_path / "config.json"))
    assert config.models["vendor/other-model"].provider == config.provider
    assert config.provider is not None and config.provider.cwd == str((tmp_path / "providers").resolve())
