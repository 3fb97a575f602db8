"""How much room a summary gets: the fit check's budget, the local bounds, the model reply's cap
and the state record's room beside a model summary."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from i_protocol.history import is_summary, text_of, utf8_len

from .failure import count
from .history import approx_size
from .normalize import canonical
from .settings import CompactConfig
from .state import CompactState
from .state_record import parse_record, record_text, statement_size

if TYPE_CHECKING:
    from i_protocol.budget import BudgetVerdict

STATEMENT_LINE = "\nstatement"
"""How a record's task statement starts (version 2)."""

PREVIOUS_SUMMARY_MAX = 64000
MIN_SUMMARY_TOKENS = 256
"""A model summary is never planned smaller than this (or an eighth of the capacity, if larger)."""
CANONICAL_BYTES = len(canonical(""))
"""The ``<continuation_summary>`` tags around a summary body, in UTF-8 bytes."""
LOCAL_MIN_CHARS = 1000
LOCAL_REDUCTION = 3  # the local summary aims at no more than a third of what it replaces (issue 30)
LOCAL_CRITICAL_MAX = 96_000  # a coding session's action log: about 25k tokens at most (issue 30)
LOCAL_MOST = 0.7
"""The local bound is never more than this share of the prefix, whatever it carries."""
LOCAL_SMALL_PREFIX = 16_000
LOCAL_MOST_SMALL = 0.4
"""A prefix under 16,000 characters is mostly fixed cost beside the system prompt and tools: its
summary is held to 40% of it, or the compacted history may not be smaller in tokens."""
LOCAL_FLOOR = 200
"""The smallest local bound (bytes): room for a state record with a short request and counts."""
SECTIONS_DENSITY = 0.75
"""Model mode writes its coding sections in this share of the bytes the plan counted for them: the
plan counts them at the prefix's average density, and commands, paths and names are denser."""
STATEMENT_PREFIX_SHARE = 0.6
"""The task statement rides on top of the local bound while the summary stays under this share of
the prefix: a summary that is most of what it replaces would not reduce it (issue 30)."""
STATEMENT_CARRIED_SHARE = 0.9
"""A statement an earlier summary carries replaces itself (like the record): the body may then
take this share of the prefix."""
REDUCING_SHARE = 0.85
"""A local summary is planned so that the compacted history is at most this share of today's
estimate (the core refuses a compaction that is not smaller in tokens)."""
SQUEEZE_SHARE = 0.8
"""Of the room beside the suffix, what a squeezed local summary is planned at: the plan counts it at
the prefix's average density, the core's check at the summary's own (ids and symbols are denser)."""
MODEL_RECORD_MAX = 16000
"""UTF-8 bytes of the state record on top of a model summary: at most the local bound (at least
1,000) and this; :func:`record_room` fits it to what the summary reply leaves."""
RECORD_SHARE_OF_REPLY = 3
"""The record may always take a third of the summary reply's allowance on top of it."""


def fit_budget(
    config: CompactConfig,
    verdict: BudgetVerdict | None,
    estimates: Any,
    sizes: list[int],
    history: list[dict[str, Any]],
    *,
    squeeze: bool = False,
) -> Any:
    """The fit check's budget, or None when the budget result cannot support one (as today)."""
    if estimates is None or verdict is None or verdict.capacity is None:
        return None
    if config.mode == "model":
        sections = _sections_bytes(config, sizes, history)
        return _model_fit_budget(verdict.capacity, verdict.output_reserve, estimates, sections)
    return _local_fit_budget(config, verdict.capacity, estimates, sizes, history, squeeze, verdict.estimate)


def _sections_bytes(config: CompactConfig, sizes: list[int], history: list[dict[str, Any]]) -> Any:
    """Bytes of the coding sections a cut's summary carries: the local bound, the statement on top."""
    from .actions import carries_statement, statement_size

    if not config.model_sections:
        return lambda cut: 0
    prefix = [0] * (len(sizes) + 1)
    for index in range(1, len(sizes)):
        prefix[index + 1] = prefix[index] + sizes[index]
    carried = carried_record(history[1:2])
    statement_at, statement = statement_size(history[1:])
    carried_statement = carries_statement(history[1:])

    def sections(cut: int) -> int:
        size = prefix[min(cut, len(sizes))]
        _, critical = bounds_for_prefix(size, config.local_max_chars, carried)
        on_top = statement_room(size, critical, statement, carried_statement)
        return critical + (on_top if 0 <= statement_at < cut - 1 else 0)

    return sections


def _model_fit_budget(capacity: int, reserve: Any, estimates: Any, sections: Any) -> Any:
    from .fit import FitBudget, summary_tokens

    if not count(reserve):
        return None
    rate = estimates.tokens_per_byte
    tags = summary_tokens(CANONICAL_BYTES, rate)
    floor = min(reserve, max(MIN_SUMMARY_TOKENS, capacity // 8))

    def model_allowance(cut: int) -> int:
        # A model summary is at most its reply's max tokens. In a small window the full reply
        # reserve may not fit beside the suffix: the summary then gets the room that is left
        # (never below the floor), and before_compact caps the summary reply at it. Where the
        # room allows, the coding sections (requests, action log) come on top (issue 30).
        suffix = estimates.suffix.get(cut)
        room = capacity - estimates.fixed_tokens - tags - (suffix if suffix is not None else capacity)
        extra = summary_tokens(sections(cut), rate)
        if room >= reserve + extra:
            return int(tags + reserve + extra)
        return int(tags + max(floor, min(reserve, room)))

    return FitBudget(capacity, estimates, model_allowance)


def sections_max_bytes(state: CompactState, choice: Any, verdict: BudgetVerdict | None) -> int | None:
    """Model mode: the bytes the plan allowed the coding sections beside the full reply (0: no room;
    None: the plan had no estimates to fit, and the sections take the local bound)."""
    if state.mode != "model" or verdict is None:
        return None
    allowance = _planned_allowance(choice)
    reserve = verdict.output_reserve
    tokens_per_byte = (choice.info or {}).get("tokensPerByte") or 1.0
    if not count(allowance) or reserve is None or tokens_per_byte <= 0:
        return None
    extra = allowance - summary_tokens_of_tags(tokens_per_byte) - reserve
    return int(extra / tokens_per_byte * SECTIONS_DENSITY) if extra > 0 else 0


def _local_fit_budget(
    config: CompactConfig,
    capacity: int,
    estimates: Any,
    sizes: list[int],
    history: list[dict[str, Any]],
    squeeze: bool,
    before: int | None = None,
) -> Any:
    from .actions import carries_statement, statement_size
    from .fit import FitBudget, summary_tokens

    rate = estimates.tokens_per_byte
    prefix = [0] * (len(sizes) + 1)
    for index in range(1, len(sizes)):
        prefix[index + 1] = prefix[index] + sizes[index]
    carried = carried_record(history[1:2])
    floor = summary_tokens(LOCAL_FLOOR + CANONICAL_BYTES, rate)
    statement_at, statement = statement_size(history[1:])
    carried_statement = carries_statement(history[1:])  # rides on top of the bound (actions)

    def local_allowance(cut: int) -> int:
        # The local route caps its body at critical_chars UTF-8 bytes (see local_bounds). With
        # ``squeeze`` (no cut fits so: a small window), the summary gets the room left beside the
        # suffix instead (never below the floor), and before_compact bounds the body by it.
        _, critical = bounds_for_prefix(prefix[min(cut, len(sizes))], config.local_max_chars, carried)
        size = prefix[min(cut, len(sizes))]
        on_top = statement_room(size, critical, statement, carried_statement) if 0 <= statement_at < cut - 1 else 0
        full = summary_tokens(critical + on_top + CANONICAL_BYTES, rate)
        suffix = estimates.suffix.get(cut)
        if before is not None and suffix is not None:
            # The compacted history must be clearly smaller than it is now, by the same estimator
            # the core checks it with: else the summary gets less (the sections give way).
            full = max(floor, min(full, int(before * REDUCING_SHARE) - int(estimates.fixed_tokens) - int(suffix)))
        if suffix is None or not squeeze:
            return full
        room = int(capacity) - int(estimates.fixed_tokens) - int(suffix)
        return max(floor, min(full, int(room * SQUEEZE_SHARE)))

    return FitBudget(capacity, estimates, local_allowance)


def _planned_allowance(choice: Any) -> Any:
    info = choice.info or {}
    planned = info.get("chosenCandidate") or info.get("keepRecentCandidate") or {}
    return planned.get("summaryAllowance")


def local_max_bytes(state: CompactState, choice: Any) -> int | None:
    """The local summary body's byte bound when the plan gave it less room than its usual bound."""
    if state.mode != "local":
        return None
    allowance = _planned_allowance(choice)
    tokens_per_byte = (choice.info or {}).get("tokensPerByte")
    if not count(allowance) or not isinstance(tokens_per_byte, int | float) or tokens_per_byte <= 0:
        return None
    return max(LOCAL_FLOOR, int(allowance / tokens_per_byte) - CANONICAL_BYTES)


def summary_max_tokens(state: CompactState, choice: Any, verdict: BudgetVerdict | None) -> int | None:
    """The summary reply's cap when the plan gave it less than the full reply reserve (model mode)."""
    if state.mode != "model" or verdict is None:
        return None
    allowance = _planned_allowance(choice)
    reserve = verdict.output_reserve
    tokens_per_byte = (choice.info or {}).get("tokensPerByte") or 1.0
    if not count(allowance) or reserve is None:
        return None
    cap = allowance - summary_tokens_of_tags(tokens_per_byte)
    return cap if 0 < cap < reserve else None


def summary_tokens_of_tags(tokens_per_byte: float) -> int:
    """Tokens of the canonical ``<continuation_summary>`` tags at ``tokens_per_byte``."""
    from .fit import summary_tokens

    return summary_tokens(CANONICAL_BYTES, tokens_per_byte)


def planned_prefix(state: CompactState, data: dict[str, Any]) -> int | None:
    """The prefix size ``compact_plan`` measured, when ``state`` belongs to this very cut."""
    cut = data.get("cut")
    messages = data.get("messages")
    if state.sizes is None or state.cut != cut or not isinstance(cut, int):
        return None
    prefix = state.sizes.get("prefix")
    if not isinstance(messages, list) or len(messages) != cut - 1:
        return None
    return prefix if count(prefix) else None


def local_bounds(messages: list[dict[str, Any]], configured: int, prefix: int | None = None) -> tuple[int, int]:
    """``(max_chars, critical_chars)`` of a local summary.

    ``max_chars`` is ``local_max_chars``, and at most a fifth of the prefix: a summary as large
    as what it replaces cannot reduce the comparable estimate. Pending approvals and ids may
    extend the summary up to a fifth of the prefix (at most 64,000 characters), so the bound
    trims them only when they alone would break the 80% reduction. ``critical_chars`` is also
    the body's bound in UTF-8 bytes, which is what ``compact_plan`` allows for a local summary.
    ``prefix``: the size ``compact_plan`` already measured.
    """
    if prefix is None:
        prefix = sum(approx_size(m) for m in messages)
    return bounds_for_prefix(prefix, configured, carried_record(messages[:1]))


def carried_record(head: list[dict[str, Any]]) -> int:
    """UTF-8 bytes of the state record and the coding sections of the summary at the head of a
    prefix (0 without one)."""
    if not head or not is_summary(head[0]):
        return 0
    from .actions import carried_bytes

    text = text_of(head[0])
    record = record_text(text)
    # The coding sections (requests, action log) are carried like the record (issue 30); the
    # record's task statement is not: it has its own room on top (statement_room).
    size = utf8_len(record) if record is not None else 0
    if record is not None and STATEMENT_LINE in record:
        ledger = parse_record(record)
        size -= statement_size(ledger.statement if ledger is not None else None)
    return size + carried_bytes(text)


def bounds_for_prefix(prefix: int, configured: int, carried: int = 0) -> tuple[int, int]:
    """:func:`local_bounds` of a prefix of ``prefix`` characters (``approx_size``).

    ``carried``: the bytes of the state record the prefix starts with. It is already as small as
    it gets, so it is carried on top and only the rest of the prefix is held to a fifth: else a
    record growing over generations would be trimmed, a little more each time.
    """
    carried = min(carried, prefix)
    # Carried content (record, requests, log) rides on top, but never past half the prefix: a
    # summary of little new work after a large summary must still reduce (the log gives way).
    most = LOCAL_MOST if prefix >= LOCAL_SMALL_PREFIX else LOCAL_MOST_SMALL
    fifth = min((prefix - carried) // LOCAL_REDUCTION + carried, max(LOCAL_FLOOR, int(prefix * most)))
    # A prefix under 5,000 characters may take up to half of itself (at most 1,000, at least the
    # floor): a bound larger than the prefix could never reduce it, and the core would refuse.
    small = max(LOCAL_FLOOR, min(LOCAL_MIN_CHARS, prefix // 2))
    max_chars = max(small, min(configured, fifth))
    return max_chars, max(max_chars, min(fifth, LOCAL_CRITICAL_MAX))


def statement_room(prefix: int, critical: int, statement: int, carried: bool = False) -> int:
    """Bytes of the task statement (the record's ``statement`` entries) on top of the bound
    ``critical`` of a ``prefix``.

    The whole body stays under :data:`STATEMENT_PREFIX_SHARE` of the prefix (a statement an
    earlier summary carries replaces itself, like the record, and may take a little more).
    """
    if prefix < LOCAL_SMALL_PREFIX:
        return 0  # a small prefix: the statement counts in the bound like the rest
    share = STATEMENT_CARRIED_SHARE if carried else STATEMENT_PREFIX_SHARE
    return max(0, min(statement, int(prefix * share) - critical))


def record_room(state: CompactState, body: str) -> int:
    """Bytes the record may take beside a model summary ``body``: what the plan allowed the
    summary reply and the reply left unused, and never less than a third of that allowance."""
    request = state.request or {}
    cap = state.summary_max_tokens if count(state.summary_max_tokens) else request.get("output_reserve")
    rate = request.get("tokens_per_byte")
    if not count(cap) or not isinstance(rate, (int, float)) or isinstance(rate, bool) or rate <= 0:
        return MODEL_RECORD_MAX  # nothing known of the window: the record as before_compact made it
    allowed = int(cap / rate)
    left = allowed - utf8_len(body) - CANONICAL_BYTES
    return min(MODEL_RECORD_MAX, max(LOCAL_FLOOR, allowed // RECORD_SHARE_OF_REPLY, left))
