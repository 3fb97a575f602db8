"""i_budget.errors: the package's error types, all exported and drawn under ``i_protocol.WorkerError``."""

from __future__ import annotations

import re

import pytest

from i_budget import errors
from i_protocol import WorkerError


def test_all_names_every_class_defined_here():
    defined = sorted(
        name for name, value in vars(errors).items() if isinstance(value, type) and value.__module__ == errors.__name__
    )
    assert errors.__all__ == defined == ["BudgetError"]


def test_the_docstring_draws_each_class_under_its_real_base():
    doc = errors.__doc__ or ""
    nodes = re.findall(r"^( *)[*+-] ([\w.]+)", doc, re.M)
    parents, stack = {}, []
    for indent, name in nodes:
        stack = stack[: (len(indent) - len(nodes[0][0])) // 2]
        parents[name.rsplit(".", 1)[-1]] = stack[-1].rsplit(".", 1)[-1] if stack else None
        stack.append(name)
    assert parents["WorkerError"] == WorkerError.__bases__[0].__name__ == "ProtocolError"
    for name in errors.__all__:
        assert getattr(errors, name).__bases__[0].__name__ == parents[name]


def test_bad_request_data_is_a_budget_error_and_becomes_the_error_frame():
    from i_budget.measure import measure_history
    from i_budget.worker import worker

    with pytest.raises(errors.BudgetError, match="history must be a list of messages, got str"):
        measure_history("not a history")
    answer = worker.handle({"id": 1, "event": "context_budget", "data": {"history": "x", "model": "m"}})
    assert answer["id"] == 1 and "error" in answer and "data" not in answer
