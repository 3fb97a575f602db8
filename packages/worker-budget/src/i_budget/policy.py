"""The budget policy: the API config's ``budget`` object validated into capacity, reserve and trigger."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from i_protocol import WorkerError
from i_protocol.errors import SettingsError
from i_protocol.settings import optional_int, optional_number, reject_unknown

MAX_CONTEXT_WINDOW = 100_000_000
"""Largest context window accepted; anything above is a configuration mistake, not a model."""

DEFAULT_SAFETY_RATIO = 0.02
DEFAULT_TOOL_OUTPUT_RATIO = 0.02
DEFAULT_TRIGGER_RATIO = (4, 5)  # window * 0.8, kept as a fraction so integer windows stay exact

TOKENIZERS = ("utf8_bytes",)
FIELDS = frozenset(
    {
        "context_window",
        "output_reserve",
        "threshold",
        "safety_ratio",
        "tool_output_ratio",
        "image_tokens",
        "images",
        "tokenizer",
        "exact_count",
    }
)
"""The ``budget`` fields; ``images`` belongs to the compact worker and ``exact_count`` to the core
(whether it asks the server for counts): both are passed through untouched."""
REMOVED_TOKENIZERS = ("cl100k_base", "o200k_base", "p50k_base", "r50k_base")


@dataclass(frozen=True, slots=True)
class Policy:
    """A validated budget policy and the limits derived from it."""

    context_window: int
    output_reserve: int
    safety_ratio: float
    tool_output_ratio: float
    threshold: int | None
    image_tokens: int | None
    byte_estimator: bool
    """``tokenizer: "utf8_bytes"``: every byte one token, nothing learned (seed 001 §7)."""
    safety_margin: int
    capacity: int
    trigger: int
    trigger_source: str
    notes: tuple[str, ...]


def _int_field(budget: dict[str, Any], key: str, low: int, high: int) -> int | None:
    return optional_int(budget, key, None, file=None, at="budget", minimum=low, maximum=high)


def _ratio_field(
    budget: dict[str, Any], key: str, default: float, *, low: float, high: float, high_open: bool
) -> float:
    return optional_number(
        budget,
        key,
        default,
        file=None,
        at="budget",
        minimum=low,
        maximum=None if high_open else high,
        below=high if high_open else None,
    )


def check_tokenizer(value: object) -> None:
    """Accept an omitted tokenizer or ``utf8_bytes``; anything else is an error, never a downgrade."""
    if value is None or value in TOKENIZERS:
        return
    if value in REMOVED_TOKENIZERS:
        raise WorkerError(
            f"budget.tokenizer {value!r} is no longer supported: the BPE tokenizers "
            f"({', '.join(REMOVED_TOKENIZERS)}) and their vocabularies were removed from i-worker-budget; "
            "omit budget.tokenizer or set it to 'utf8_bytes' (the conservative byte estimator)"
        )
    raise WorkerError(f"budget.tokenizer {value!r} is unknown; the only tokenizer is 'utf8_bytes' (or omit the field)")


def parse_policy(budget: object, max_tokens: object) -> Policy:
    """Validate the request's ``budget`` object (``max_tokens`` is the default output reserve)."""
    try:
        return _parse_policy(budget, max_tokens)
    except SettingsError as exc:
        raise WorkerError(str(exc)) from exc


def _parse_policy(budget: object, max_tokens: object) -> Policy:
    if not isinstance(budget, dict):
        raise WorkerError(f"budget must be an object with at least context_window, got {type(budget).__name__}")
    check_tokenizer(budget.get("tokenizer"))
    if "calibrate" in budget:
        raise WorkerError(
            "budget.calibrate was removed in i-worker-budget 0.2: the estimate now learns per-class token "
            "densities from real usage by itself; remove the field (or set budget.tokenizer to 'utf8_bytes' "
            "for the pure byte estimate)"
        )
    reject_unknown(budget, FIELDS, file=None, at="budget")
    if budget.get("context_window") is None:
        raise WorkerError(
            "budget.context_window is required: set it in config.json to the model's context size in tokens "
            "(`i --runtime init --base-url URL` asks a llama.cpp or vLLM server for it); the core has no model "
            "capacity table"
        )
    window = _int_field(budget, "context_window", 1, MAX_CONTEXT_WINDOW)
    assert window is not None
    reserve = _int_field(budget, "output_reserve", 0, window)
    if reserve is None:
        if max_tokens is None:
            raise WorkerError(
                "budget.output_reserve is not set and max_tokens is missing: the output reserve is unknown"
            )
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or not 0 <= max_tokens <= window:
            raise WorkerError(
                f"max_tokens (the default output reserve) must be an integer between 0 and "
                f"budget.context_window ({window}), got {max_tokens!r}"
            )
        reserve = max_tokens
    safety_ratio = _ratio_field(budget, "safety_ratio", DEFAULT_SAFETY_RATIO, low=0.0, high=0.5, high_open=True)
    tool_ratio = _ratio_field(
        budget, "tool_output_ratio", DEFAULT_TOOL_OUTPUT_RATIO, low=0.0, high=1.0, high_open=False
    )
    if tool_ratio == 0.0:
        raise WorkerError("budget.tool_output_ratio must be greater than 0 (a zero budget would cut every result)")
    threshold = _int_field(budget, "threshold", 1, window)
    image_tokens = _int_field(budget, "image_tokens", 1, window)
    # round() first: 100000 * 0.02 is 2000.0000000000002 in floating point, which must not become 2001.
    safety_margin = math.ceil(round(window * safety_ratio, 6))
    capacity = window - reserve - safety_margin
    if capacity < 1:
        raise WorkerError(
            f"budget leaves no room for input: context_window {window} - output_reserve {reserve} "
            f"- safety margin {safety_margin} (safety_ratio {safety_ratio}) = {capacity}"
        )
    notes: list[str] = []
    if threshold is None:
        trigger, source = min(window * DEFAULT_TRIGGER_RATIO[0] // DEFAULT_TRIGGER_RATIO[1], capacity), "default"
    else:
        trigger, source = min(threshold, capacity), "threshold"
        if threshold > capacity:
            notes.append(f"budget.threshold {threshold} is above the input capacity {capacity}; trigger is {capacity}")
    return Policy(
        context_window=window,
        output_reserve=reserve,
        safety_ratio=safety_ratio,
        tool_output_ratio=tool_ratio,
        threshold=threshold,
        image_tokens=image_tokens,
        byte_estimator=budget.get("tokenizer") == "utf8_bytes",
        safety_margin=safety_margin,
        capacity=capacity,
        trigger=trigger,
        trigger_source=source,
        notes=tuple(notes),
    )
