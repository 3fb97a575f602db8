"""i_budget.errors: the package's error types, all exported and drawn under ``i_protocol.WorkerError``."""

from __future__ import annotations

import pytest

from i_budget import errors
from i_protocol import WorkerError
from i_protocol.testing import error_module_problems


def test_every_class_is_exported_and_drawn_under_its_real_base():
    assert error_module_problems(errors) == []
    assert errors.__all__ == ["BudgetError"]
    assert getattr(errors, errors.__all__[0]).__bases__[0] is WorkerError


def test_bad_request_data_is_a_budget_error_and_becomes_the_error_frame():
    from i_budget.measure import measure_history
    from i_budget.worker import worker

    with pytest.raises(errors.BudgetError, match="history must be a list of messages, got str"):
        measure_history("not a history")
    answer = worker.handle({"id": 1, "event": "context_budget", "data": {"history": "x", "model": "m"}})
    assert answer["id"] == 1 and "error" in answer and "data" not in answer
