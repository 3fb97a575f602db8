"""i_compact.errors: the package's error types, all exported and drawn under ``i_protocol.WorkerError``."""

from __future__ import annotations

import pytest

from i_compact import errors
from i_protocol import WorkerError
from i_protocol.testing import error_module_problems


def test_every_class_is_exported_and_drawn_under_its_real_base():
    assert error_module_problems(errors) == []
    assert errors.__all__ == ["CompactError"]
    assert getattr(errors, errors.__all__[0]).__bases__[0] is WorkerError


def test_bad_request_data_is_a_compact_error_and_becomes_the_error_frame(tmp_path, monkeypatch):
    from i_compact.worker import worker

    for name in ("CONFIG", "DATA", "CACHE", "RUNTIME"):
        monkeypatch.setenv(f"I_{name}_DIR", str(tmp_path / name.lower()))
    with pytest.raises(errors.CompactError, match=r"data\.history must be a list of message objects"):
        worker._dispatch({"id": 1, "event": "compact_plan", "data": {"history": "x"}})
    answer = worker.handle({"id": 2, "event": "compact_plan", "data": {"history": "x"}})
    assert answer == {"id": 2, "error": "compact_plan: data.history must be a list of message objects"}
