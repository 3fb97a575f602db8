"""i_protocol.errors: everything exported, and the hierarchy its docstring draws is the real one."""

from __future__ import annotations

import i_protocol
from i_protocol import errors
from i_protocol.testing import drawn_parents


def test_all_names_every_exception_class_defined_here():
    defined = sorted(
        name for name, value in vars(errors).items() if isinstance(value, type) and value.__module__ == errors.__name__
    )
    assert errors.__all__ == defined


def test_the_docstring_draws_the_real_hierarchy():
    parents = drawn_parents(errors.__doc__ or "")
    assert sorted(parents) == errors.__all__
    for name, parent in parents.items():
        base = getattr(errors, name).__bases__[0]
        assert base.__name__ == (parent or "Exception"), f"{name} derives from {base.__name__}, drawn under {parent}"


def test_the_package_exports_every_error_that_hosts_and_workers_catch():
    for name in ("ProtocolError", "FrameError", "WorkerError", "CallError", "CallTimeout", "ErrorFrame"):
        assert getattr(i_protocol, name) is getattr(errors, name)


def test_a_call_error_keeps_the_problem_apart_from_the_worker():
    error = errors.CallTimeout("did not answer within the deadline of 15 s", worker="i-budget")
    assert str(error) == "worker i-budget did not answer within the deadline of 15 s"
    assert error.problem == "did not answer within the deadline of 15 s"
    assert str(errors.CallError("could not be sent")) == "could not be sent"
