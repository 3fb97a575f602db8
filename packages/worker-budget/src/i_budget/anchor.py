"""The usage anchor: the last response's real token counts and the history prefix they covered."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .density import Classes, parse_classes

MAX_USAGE_TOKENS = 1_000_000_000
"""Counts above this are treated as corrupt (overflowing) usage, not as a real request."""


@dataclass(frozen=True, slots=True)
class Anchor:
    """A structurally valid usage anchor (it still has to match the model and the prefix)."""

    model: str
    prefix_messages: int
    prefix_fingerprint: str
    input_tokens: int
    output_tokens: int
    tools_fingerprint: str | None
    classes: Classes | None = None
    """Class bytes of the anchored request (messages + tool schemas), when this worker wrote them."""
    base: tuple[int, Classes] | None = None
    """Input tokens and class bytes of the request this one extended: the increment's baseline."""


@dataclass(frozen=True, slots=True)
class Fallback:
    """Why the anchor cannot be used: a stable reason code and a sentence for people."""

    reason: str
    detail: str


def _count(usage: dict[str, Any], key: str) -> int | Fallback:
    value = usage.get(key)
    if value is None:
        return Fallback("usage_partial", f"usage.{key} is missing")
    if isinstance(value, bool) or not isinstance(value, int):
        return Fallback("usage_invalid", f"usage.{key} must be a non-negative integer, got {value!r}")
    if value < 0:
        return Fallback("usage_invalid", f"usage.{key} is negative ({value})")
    if value > MAX_USAGE_TOKENS:
        return Fallback("usage_overflow", f"usage.{key} {value} exceeds {MAX_USAGE_TOKENS}")
    return value


def parse_anchor(usage: object) -> Anchor | Fallback:
    """Validate the shape of ``usage``; every problem becomes a marked fallback, never an error."""
    if usage is None:
        return Fallback("no_usage", "no usage from an earlier response (first request)")
    if not isinstance(usage, dict):
        return Fallback("usage_invalid", f"usage must be an object, got {type(usage).__name__}")
    counts: list[int] = []
    for key in ("input_tokens", "output_tokens"):
        value = _count(usage, key)
        if isinstance(value, Fallback):
            return value
        counts.append(value)
    if counts[0] == 0:
        return Fallback("usage_invalid", "usage.input_tokens is 0; a real request always has input")
    if counts[0] + counts[1] > MAX_USAGE_TOKENS:
        return Fallback("usage_overflow", f"usage input+output {counts[0] + counts[1]} exceeds {MAX_USAGE_TOKENS}")
    model = usage.get("model")
    if not isinstance(model, str) or not model:
        return Fallback("usage_partial", "usage.model is missing: the anchor cannot be tied to a model")
    prefix = usage.get("prefix_messages")
    if isinstance(prefix, bool) or not isinstance(prefix, int) or prefix < 1:
        return Fallback("usage_partial", f"usage.prefix_messages must be a positive integer, got {prefix!r}")
    fingerprint = usage.get("prefix_fingerprint")
    if not isinstance(fingerprint, str) or not fingerprint:
        return Fallback("usage_partial", "usage.prefix_fingerprint is missing")
    tools_fp = usage.get("tools_fingerprint")
    if tools_fp is not None and not isinstance(tools_fp, str):
        return Fallback("usage_invalid", f"usage.tools_fingerprint must be a string, got {tools_fp!r}")
    classes = parse_classes(usage.get("classes"))
    base = _base(usage.get("base"), counts[0], classes)
    return Anchor(model, prefix, fingerprint, counts[0], counts[1], tools_fp, classes, base)


def _base(raw: object, input_tokens: int, classes: Classes | None) -> tuple[int, Classes] | None:
    """A usable increment baseline: fewer tokens and no class larger than the anchored request's."""
    if not isinstance(raw, dict) or classes is None:
        return None
    tokens = raw.get("input_tokens")
    base_classes = parse_classes(raw.get("classes"))
    if isinstance(tokens, bool) or not isinstance(tokens, int) or not 0 < tokens < input_tokens:
        return None
    if base_classes is None or any(b > c for b, c in zip(base_classes, classes, strict=True)):
        return None
    return tokens, base_classes
