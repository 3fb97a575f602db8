"""i_web.errors: the package's error types, all exported and drawn under ``i_protocol.WorkerError``."""

from __future__ import annotations

import re

from i_protocol import WorkerError
from i_web import errors


def test_all_names_every_class_defined_here():
    defined = sorted(
        name for name, value in vars(errors).items() if isinstance(value, type) and value.__module__ == errors.__name__
    )
    assert errors.__all__ == defined == ["WebError"]


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
