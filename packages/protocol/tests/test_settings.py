"""i_protocol.settings: every check names the file and the field, in one message shape."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_protocol.errors import ConfigError, SettingsError
from i_protocol.settings import (
    field_error,
    optional_bool,
    optional_choice,
    optional_int,
    optional_number,
    optional_object,
    optional_str,
    optional_str_list,
    reject_unknown,
    require_argv,
    require_bool,
    require_choice,
    require_int,
    require_number,
    require_str,
)

F = "/cfg/memory.json"


def message(call: object, *args: object, **kwargs: object) -> str:
    with pytest.raises(SettingsError) as caught:
        call(*args, **kwargs)  # type: ignore[operator]
    return str(caught.value)


def test_integer_messages_name_file_field_bounds_and_value() -> None:
    assert (
        message(require_int, {"max_bytes": "x"}, "max_bytes", file=F, minimum=1)
        == f'{F}: max_bytes must be an integer ≥ 1, got "x"'
    )
    assert (
        message(require_int, {"n": 11}, "n", file=F, minimum=1, maximum=10)
        == f"{F}: n must be an integer from 1 to 10, got 11"
    )
    assert message(require_int, {"n": 5}, "n", file=F, maximum=4) == f"{F}: n must be an integer ≤ 4, got 5"
    assert message(require_int, {}, "n", file=F) == f"{F}: n must be an integer, got null"


@pytest.mark.parametrize("value", [True, False, 2.0, "3", None, [1], {"a": 1}])
def test_an_integer_is_never_a_boolean_a_float_or_a_string(value: object) -> None:
    with pytest.raises(SettingsError):
        require_int({"n": value}, "n", file=F)


@given(st.integers(-50, 50), st.integers(-20, 0), st.integers(0, 20))
def test_require_int_accepts_exactly_the_integers_in_range(value: int, low: int, high: int) -> None:
    try:
        got = require_int({"n": value}, "n", file=F, minimum=low, maximum=high)
    except SettingsError:
        assert not low <= value <= high
    else:
        assert low <= value <= high and got == value


def test_nested_fields_are_dotted_and_a_fileless_object_has_no_prefix() -> None:
    assert (
        message(require_number, {"safety_ratio": 0.5}, "safety_ratio", file=None, at="budget", minimum=0.0, below=0.5)
        == "budget.safety_ratio must be a number in [0.0, 0.5), got 0.5"
    )
    assert (
        message(require_bool, {"on": "yes"}, "on", file="web.json", at="search.results")
        == 'web.json: search.results.on must be true or false, got "yes"'
    )


def test_numbers_are_finite_and_bounded() -> None:
    assert require_number({"r": 1}, "r", file=F, minimum=0, maximum=1) == 1.0
    assert message(require_number, {"r": 1.5}, "r", file=F, minimum=0, maximum=1) == (
        f"{F}: r must be a number in [0, 1], got 1.5"
    )
    for bad in (True, "0.5", float("nan"), float("inf")):
        with pytest.raises(SettingsError, match="r must be a number"):
            require_number({"r": bad}, "r", file=F)


def test_absent_and_null_take_the_default_and_anything_else_is_checked() -> None:
    for obj in ({}, {"v": None}):
        assert optional_bool(obj, "v", True, file=F) is True
        assert optional_int(obj, "v", 7, file=F) == 7
        assert optional_number(obj, "v", None, file=F) is None
        assert optional_str(obj, "v", "d", file=F) == "d"
        assert optional_choice(obj, "v", ("a", "b"), "a", file=F) == "a"
        assert optional_object(obj, "v", {}, file=F) == {}
        assert optional_str_list(obj, "v", [], file=F) == []
    assert message(optional_bool, {"v": 0}, "v", True, file=F) == f"{F}: v must be true or false, got 0"
    assert optional_int({"v": 3}, "v", 7, file=F, minimum=1) == 3


def test_choices_are_listed_in_order() -> None:
    assert message(require_choice, {"mode": "deepseek"}, "mode", ("observe", "openai"), file="cache.json") == (
        'cache.json: mode must be one of observe, openai, got "deepseek"'
    )
    with pytest.raises(SettingsError):
        require_choice({"mode": ["observe"]}, "mode", ("observe",), file=F)


def test_string_checks_never_echo_a_string_value() -> None:
    secret = "https://search.example/?key=sk-live-123"
    text = message(require_str, {"u": secret}, "u", file=F, max_chars=10)
    assert text == f"{F}: u must be a string of 1 to 10 characters" and secret not in text
    assert (
        message(require_str, {"u": "a\nb"}, "u", file=F, one_line=True) == f"{F}: u must be a non-empty one-line string"
    )
    assert message(require_str, {"u": ""}, "u", file=F) == f"{F}: u must be a non-empty string"
    assert message(require_str, {"u": 3}, "u", file=F) == f"{F}: u must be a non-empty string, got 3"
    assert require_str({"u": ""}, "u", file=F, min_chars=0) == ""
    assert message(optional_str_list, {"roots": "x"}, "roots", [], file=F, nonempty_items=True) == (
        f"{F}: roots must be an array of non-empty strings, got a string"
    )


def test_a_long_value_is_clipped() -> None:
    text = message(require_bool, {"b": "y" * 500}, "b", file=F)
    assert len(text) < 120 and text.endswith("…")


def test_argv_is_an_array_never_a_shell_string() -> None:
    assert require_argv({"exec": ["/bin/w", "--x"]}, "exec", file=F) == ["/bin/w", "--x"]
    assert message(require_argv, {"exec": "/bin/w --token sk-1"}, "exec", file="bindings.json", at="compact") == (
        "bindings.json: compact.exec must be an argv array, not a shell string"
    )
    for bad in ([], ["/bin/w", 3], None, {"a": 1}):
        with pytest.raises(SettingsError, match=r"exec must be a non-empty array of strings"):
            require_argv({"exec": bad}, "exec", file=F)


def test_unknown_fields_are_named_with_the_known_ones() -> None:
    reject_unknown({"enabled": True}, ("enabled", "inject"), file=F)
    assert message(reject_unknown, {"enable": True, "zz": 1}, ("enabled", "inject"), file=F) == (
        f"{F}: unknown field(s) enable, zz; known fields: enabled, inject"
    )
    assert message(reject_unknown, {"x": 1}, frozenset({"url", "method"}), file="web.json", at="search") == (
        "web.json: search: unknown field(s) x; known fields: method, url"
    )


def test_field_error_is_a_config_error_in_the_same_shape() -> None:
    error = field_error("header", "an HTTP header name", file="web.json", at="search.credentials_header")
    assert isinstance(error, ConfigError)
    assert str(error) == "web.json: search.credentials_header.header must be an HTTP header name"
    assert str(field_error("method", "GET or POST", file=None, got="PUT")) == 'method must be GET or POST, got "PUT"'
