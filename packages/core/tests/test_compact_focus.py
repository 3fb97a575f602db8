"""``/compact FOCUS``'s answer field: the core reads ``focus_used`` only from a compactor that declared
the ``focus`` extension (``hook_results.EXTENSION_FIELDS``); from any other it is taken off, and the
console says the focus was ignored."""

from __future__ import annotations

from i_core.hook_results import undeclared
from i_protocol.events import parse_answer


def test_focus_used_is_read_only_from_a_compactor_that_declared_focus():
    answer = {"summary": "s", "focus": "the parser", "focus_used": True}
    kept, dropped = undeclared("before_compact", answer, lambda extension: extension == "focus")
    assert parse_answer("before_compact", kept, answer).focus_used is True and dropped == []
    cut, dropped = undeclared("before_compact", answer, lambda extension: False)
    assert parse_answer("before_compact", cut, answer).focus_used is False
    assert dropped == [("focus_used", "focus")]
