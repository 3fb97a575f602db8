"""Checks a package's own tests run against it, so every package tests its contracts the same way.

Public API, versioned with the protocol: ``drawn_parents``, ``error_module_problems`` and
``secret_forms`` (the secret forms every place that keeps or sends text must mask).
"""

from __future__ import annotations

import json
import re
from importlib import resources
from types import ModuleType
from typing import TypedDict

__all__ = ["SecretForm", "drawn_parents", "error_module_problems", "secret_forms"]

_NODE = re.compile(r"^( *)[*+-] ([A-Za-z_][\w.]*)", re.M)


def drawn_parents(doc: str) -> dict[str, str | None]:
    """``{class: parent}`` from a docstring tree of ``* Base`` / ``+ Child`` / ``- Grandchild`` lines.

    Two spaces of indentation per level; a dotted name (``i_protocol.WorkerError``) counts by its
    last part.
    """
    nodes = _NODE.findall(doc)
    parents: dict[str, str | None] = {}
    stack: list[str] = []
    for indent, name in nodes:
        stack = stack[: (len(indent) - len(nodes[0][0])) // 2]
        parents[name.rsplit(".", 1)[-1]] = stack[-1].rsplit(".", 1)[-1] if stack else None
        stack.append(name)
    return parents


def error_module_problems(module: ModuleType) -> list[str]:
    """What is wrong with a package's exceptions module (empty when nothing is).

    The rules: ``__all__`` lists exactly the exception classes the module defines, and its
    docstring draws each of them under its real base class (the top of the tree stands alone).
    """
    defined = sorted(
        name
        for name, value in vars(module).items()
        if isinstance(value, type) and issubclass(value, BaseException) and value.__module__ == module.__name__
    )
    problems = []
    exported = sorted(getattr(module, "__all__", []))
    if exported != defined:
        problems.append(f"{module.__name__}.__all__ is {exported}, but the module defines {defined}")
    parents = drawn_parents(module.__doc__ or "")
    for name in defined:
        base = getattr(module, name).__bases__[0].__name__
        if name in parents and parents[name] is None:
            continue  # the top of the drawn tree
        if parents.get(name, "<not drawn>") != base:
            problems.append(
                f"{module.__name__}.{name} derives from {base}, but the docstring draws {parents.get(name)}"
            )
    return problems


class SecretForm(TypedDict):
    """One form of ``secret_forms.json``: a text, the secret values in it, the words that stay."""

    id: str
    text: str
    secrets: list[str]
    kept: list[str]


def secret_forms() -> list[SecretForm]:
    """The committed secret forms (``i_protocol/secret_forms.json``): each place that keeps or
    sends text (summaries, memory, transcripts) tests that none of their ``secrets`` is left."""
    text = resources.files("i_protocol").joinpath("secret_forms.json").read_text(encoding="utf-8")
    forms: list[SecretForm] = json.loads(text)["forms"]
    return forms
