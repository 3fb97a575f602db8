"""i_protocol.testing: the exceptions-module rule every package's tests apply."""

from __future__ import annotations

import types

from i_protocol import errors
from i_protocol.testing import drawn_parents, error_module_problems


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
