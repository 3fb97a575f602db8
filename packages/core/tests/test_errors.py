"""i_core.errors: every class is exported, drawn where it really is, with the exit code it has."""

from __future__ import annotations

import re

import pytest

from i_core import errors
from i_core.errors import describe_failure


def drawn() -> dict[str, tuple[str | None, int]]:
    """``{class: (parent, exit code)}`` as the module docstring draws them."""
    nodes = re.findall(r"^( *)[*+-] (\w+) \.+ (\d+) ", errors.__doc__ or "", re.M)
    result: dict[str, tuple[str | None, int]] = {}
    stack: list[str] = []
    for indent, name, code in nodes:
        stack = stack[: (len(indent) - len(nodes[0][0])) // 2]
        result[name] = (stack[-1] if stack else None, int(code))
        stack.append(name)
    return result


def test_all_names_everything_public_defined_here():
    public = sorted(
        name
        for name, value in vars(errors).items()
        if not name.startswith("_")
        and (name.startswith("EXIT_") or getattr(value, "__module__", "") == errors.__name__)
    )
    assert sorted(errors.__all__) == public


def test_the_docstring_draws_every_class_under_its_real_base_with_its_exit_code():
    classes = {name for name in errors.__all__ if isinstance(getattr(errors, name), type)}
    tree = drawn()
    assert set(tree) == classes
    for name, (parent, code) in tree.items():
        cls = getattr(errors, name)
        assert cls.__bases__[0].__name__ == (parent or "Exception")
        assert cls.exit_code == code


def test_exit_codes_are_the_documented_ones():
    # packages/core/README.md: 1 bug, 2 usage, 3 config/session/files, 4 model, 5 budget, 6 worker, 7 i-protocol does not fit, 130, 143.
    codes = {name: getattr(errors, name) for name in errors.__all__ if name.startswith("EXIT_")}
    assert codes == {
        "EXIT_FAILURE": 1,
        "EXIT_USAGE": 2,
        "EXIT_CONFIG": 3,
        "EXIT_MODEL": 4,
        "EXIT_BUDGET": 5,
        "EXIT_WORKER": 6,
        "EXIT_PROTOCOL": 7,
        "EXIT_INTERRUPTED": 130,
        "EXIT_TERMINATED": 143,
    }


@pytest.mark.parametrize(
    "error, code",
    [
        (errors.SessionError("s.json: the saved history is invalid"), 3),
        (errors.ConfigError("config.json: model is missing"), 3),
        (errors.ProviderError("image_url part has no url"), 4),
        (errors.TransportError("HTTP 500", status=500), 4),
        (errors.ContextTooLong(input_tokens=9, limit=8), 4),
        (errors.BudgetExhausted("does not fit"), 5),
        (errors.HookResultError("hook failed on 'x': worker w returned no body object"), 6),
        (errors.WorkerFailure("hook failed on 'x': worker w did not answer"), 6),
    ],
)
def test_an_expected_error_ends_the_command_with_its_code_and_its_own_line(error, code):
    assert describe_failure(error) == (str(error), code)


@pytest.mark.parametrize("error", [errors.ToolError("no such file"), errors.CompactionError("invalid_cut", "bad cut")])
def test_the_errors_that_never_end_a_run_are_a_bug_if_they_do(error):
    line, code = describe_failure(error)
    assert code == 1 and "this is a bug" in line
