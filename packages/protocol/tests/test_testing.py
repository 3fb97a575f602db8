"""i_protocol.testing: the exceptions-module rule and the test time scale every package's tests use."""

from __future__ import annotations

import types

import pytest

from i_protocol import errors
from i_protocol.testing import drawn_parents, error_module_problems, scaled, time_scale, wait_until


def _module(doc: str, **classes: type) -> types.ModuleType:
    module = types.ModuleType("pkg.errors", doc)
    for name, cls in classes.items():
        cls.__module__ = "pkg.errors"
        setattr(module, name, cls)
    module.__all__ = sorted(classes)  # type: ignore[attr-defined]
    return module


def test_a_tree_is_read_by_indentation():
    doc = "Errors::\n\n    * Base\n      + Child\n        - Grand\n      + Other\n"
    assert drawn_parents(doc) == {"Base": None, "Child": "Base", "Grand": "Child", "Other": "Base"}


def test_the_protocol_itself_keeps_the_rule():
    assert error_module_problems(errors) == []


def test_a_wrongly_drawn_class_and_a_missing_export_are_named():
    class Base(Exception):
        pass

    class Child(Base):
        pass

    good = _module("* Exception\n  + Base\n    - Child\n", Base=Base, Child=Child)
    assert error_module_problems(good) == []
    wrong = _module("* Exception\n  + Base\n  + Child\n", Base=Base, Child=Child)
    assert error_module_problems(wrong) == ["pkg.errors.Child derives from Base, but the docstring draws Exception"]
    wrong.__all__ = ["Base"]  # type: ignore[attr-defined]
    assert "pkg.errors.__all__ is ['Base'], but the module defines ['Base', 'Child']" in error_module_problems(wrong)


def test_the_time_scale_defaults_to_4_and_multiplies_a_test_timeout(monkeypatch):
    monkeypatch.delenv("I_TEST_TIME_SCALE", raising=False)
    assert time_scale() == 4 and scaled(1.5) == 6
    monkeypatch.setenv("I_TEST_TIME_SCALE", "10")
    assert scaled(2) == 20
    for bad in ("0", "-1", "fast", "inf", "nan"):
        monkeypatch.setenv("I_TEST_TIME_SCALE", bad)
        with pytest.raises(ValueError, match="I_TEST_TIME_SCALE must be a positive number"):
            time_scale()


def test_wait_until_polls_for_the_condition_and_says_whether_it_came(monkeypatch):
    monkeypatch.setenv("I_TEST_TIME_SCALE", "1")
    calls = []
    assert wait_until(lambda: calls.append(1) or len(calls) >= 3, 30, interval=0)
    assert len(calls) == 3
    assert wait_until(lambda: False, 0) is False
