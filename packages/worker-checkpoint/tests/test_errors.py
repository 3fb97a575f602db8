"""i_checkpoint.errors: the package's error type, exported and drawn under ``i_protocol.WorkerError``."""

from __future__ import annotations

from i_checkpoint import errors

from i_protocol import WorkerError
from i_protocol.testing import error_module_problems


def test_every_class_is_exported_and_drawn_under_its_real_base():
    assert error_module_problems(errors) == []
    assert errors.__all__ == ["CheckpointError"]
    assert errors.CheckpointError.__bases__[0] is WorkerError
