"""Cut selection: where the summarised prefix ends and the untouched suffix begins."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from i_protocol.history import is_summary

from .history import approx_size, boundaries, is_real_user

NO_USER_ALIGNED = "assistant, no user-aligned cut"
"""The alignment of a cut at an assistant step because no real user message could start the
suffix (an autonomous run): ``lastAttempt.alignment`` says so (issue 30)."""
USER_ALIGNMENT_SHARE = 0.5
"""A user-aligned cut is preferred while it still compacts at least this share of what the
latest assistant-aligned cut would (measured in content size)."""


@dataclass(frozen=True)
class CutChoice:
    """The chosen cut (None to decline), why, and how it is aligned."""

    cut: int | None
    reason: str
    alignment: str | None = None


def choose_cut(
    history: list[dict[str, Any]],
    keep_recent: int,
    sizes: list[int] | None = None,
    ok: list[bool] | None = None,
) -> CutChoice:
    """The best safe cut keeping at least ``keep_recent`` messages and whole tool batches.

    Valid cuts satisfy ``2 <= cut < len(history)``, start at a user or assistant message
    outside any tool batch, and leave something other than an old summary to summarise.
    ``sizes`` (``approx_size`` of each message) and ``ok`` (:func:`boundaries`) save measuring
    the history twice.
    """
    n = len(history)
    latest = min(n - keep_recent, n - 1)
    if latest < 2:
        return CutChoice(None, "history_too_short")
    if ok is None:
        ok = boundaries(history)
    best_any = best_user = best_assistant = None
    for k in range(latest, 1, -1):
        if not ok[k]:
            continue
        if best_any is None:
            best_any = k
        if best_assistant is None and history[k].get("role") == "assistant":
            best_assistant = k
        if is_real_user(history, k):
            best_user = k
            break
    if best_any is None:
        return CutChoice(None, "no_safe_cut")
    if best_user is None and best_assistant is not None:
        # No user-aligned cut (an autonomous run: one real request, then a harness speaking in
        # the user role): the newest assistant step that keeps keep_recent, whole tool batch and all.
        best_any = best_assistant
    candidates = [(best_any, str(history[best_any].get("role")))]
    if best_user is not None and best_user != best_any:
        # Sizes of new content only: an old summary in the prefix must not make a user-aligned
        # cut look worthwhile when it would compact almost nothing new.
        if sizes is None:
            sizes = [approx_size(m) for m in history]
        user_size = sum(sizes[k] for k in range(1, best_user) if not is_summary(history[k]))
        any_size = user_size + sum(sizes[best_user:best_any])
        if user_size >= USER_ALIGNMENT_SHARE * any_size:
            candidates.insert(0, (best_user, "user"))
    elif best_user == best_any:
        candidates = [(best_any, "user")]
    for cut, alignment in candidates:
        if alignment == "assistant" and best_user is None:
            alignment = NO_USER_ALIGNED
        if not all(is_summary(m) for m in history[1:cut]):
            return CutChoice(cut, "", alignment)
    return CutChoice(None, "nothing_to_compact")


def is_valid_cut(history: list[dict[str, Any]], cut: int) -> bool:
    """The core's acceptance rule plus "never inside a tool batch"."""
    return 2 <= cut < len(history) and boundaries(history)[cut]
