"""What every package's tests share, so every package tests its contracts the same way.

Public API, versioned with the protocol: ``drawn_parents`` and ``error_module_problems`` (the rule
for a package's exceptions module); ``time_scale``, ``scaled`` and ``wait_until`` (tests that do
not depend on the machine being idle); ``alive`` and ``wait_dead`` (whether a worker's processes
are gone); ``secret_forms`` (the secret forms every place that keeps or sends text must mask).

A test's timeouts — a limit it passes to the code under test so that the limit must *not* fire,
or a guard on a subprocess — are multiplied by ``I_TEST_TIME_SCALE`` (default 4), so a loaded
machine (both cores busy) slows a test down instead of failing it. The product's own limits are
never scaled, and no test asserts how long something took: timings belong in ``bench/``.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable, Iterable
from importlib import resources
from types import ModuleType
from typing import TypedDict

__all__ = [
    "SecretForm",
    "alive",
    "drawn_parents",
    "error_module_problems",
    "scaled",
    "secret_forms",
    "time_scale",
    "wait_dead",
    "wait_until",
]

TIME_SCALE_ENV = "I_TEST_TIME_SCALE"
DEFAULT_TIME_SCALE = 4.0


def time_scale() -> float:
    """``I_TEST_TIME_SCALE`` as a positive number (default 4); anything else is an error."""
    raw = os.environ.get(TIME_SCALE_ENV, "").strip()
    if not raw:
        return DEFAULT_TIME_SCALE
    try:
        scale = float(raw)
    except ValueError:
        scale = 0.0
    if not scale > 0 or scale == float("inf"):
        raise ValueError(f"{TIME_SCALE_ENV} must be a positive number, not {raw!r}")
    return scale


def scaled(seconds: float) -> float:
    """``seconds`` times the test time scale: a timeout a test passes to the code under test."""
    return seconds * time_scale()


def wait_until(condition: Callable[[], object], timeout: float, *, interval: float = 0.02) -> bool:
    """Poll ``condition`` until it is true or ``scaled(timeout)`` seconds passed; its last verdict.

    The wait of a test that waits for something to happen, instead of sleeping a fixed time.
    """
    deadline = time.monotonic() + scaled(timeout)
    while True:
        if condition():
            return True
        if time.monotonic() >= deadline:
            return bool(condition())
        time.sleep(interval)


_NODE = re.compile(r"^( *)[*+-] ([A-Za-z_][\w.]*)", re.M)


def alive(pid: int) -> bool:
    """True while process ``pid`` exists and is not a zombie (a zombie is dead for a test: it is
    reaped soon and holds nothing open)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # it exists, it is someone else's
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except FileNotFoundError:
        return not os.path.isdir("/proc")  # gone since kill(0), or a system without /proc
    except OSError:
        return True


def wait_dead(pids: Iterable[int], within: float) -> list[int]:
    """The ``pids`` still alive after at most ``within`` seconds (scaled): ``[]`` when all are gone."""
    watched = list(pids)
    wait_until(lambda: not any(alive(pid) for pid in watched), within)
    return [pid for pid in watched if alive(pid)]


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
