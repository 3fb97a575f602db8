"""Per-class token density: what a byte of each kind of text costs, learned from real usage.

Text is measured in four classes that can be told apart without a tokenizer:

- ``word``: ASCII letters and spaces outside id-like runs (prose, identifiers, JSON keys);
- ``id``: alphanumeric runs that contain a digit (numbers, hex, UUIDs, base64-like ids);
- ``symbol``: every other ASCII byte (punctuation, JSON syntax, escapes, newlines);
- ``other``: non-ASCII bytes (CJK, accents, emoji).

A usage anchor tells how many tokens a known mix of classes cost. Each observation is split
between its classes by a fixed prior shape (``PRIOR``: roughly how a byte-level BPE prices each
class) scaled to the observed total, and a class learns only from observations where it
carries a real share of the tokens. A class's rate is the densest (largest) scale seen in its
recent observations times ``PRIOR`` times ``MARGIN``; a class never observed costs 1 token per
byte, as the seeds' byte estimator does. So an estimate can only go below the truth by what the
prior shape gets wrong inside one observation, which the margin covers (bench/budget_density.py
measures it on real text).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

CLASSES = ("word", "id", "symbol", "other")
Classes = tuple[int, int, int, int]
ZERO: Classes = (0, 0, 0, 0)

PRIOR = (0.22, 0.45, 0.5, 0.34)
"""Relative tokens per byte of each class; only the shape matters, observations set the scale."""
MARGIN = 1.1
"""Learned rates are multiplied by this: the estimate of uncovered content errs high."""
MIN_SHARE = 0.10
"""A class learns from an observation only where it carries this share of the prior tokens."""
MIN_CLASS_BYTES = 64
MIN_OBSERVATION_BYTES = 512
"""Smaller increments are dominated by per-message framing and would teach a false density."""
RATE_RANGE = (0.02, 2.0)
"""Plausible tokens per byte of an observation; outside it the usage is corrupt and not learned."""
KEEP_SCALES = 8
"""Recent scales kept per class; the rate follows the densest of them (8: bench/budget_density.py
measured worst 0.98x / mean +14% against 1.06x / +18% with 16, and a faster recovery from the
framing-heavy first request)."""
FALLBACK_RATE = 1.0

_ASCII = bytes(range(128))
_SHAPE = bytes(
    ord("a") if 65 <= byte <= 90 or 97 <= byte <= 122 else ord("1") if 48 <= byte <= 57 else ord(" ")
    for byte in range(256)
)
"""Every ASCII letter becomes ``a``, every digit ``1``, anything else a space: alphanumeric runs stay runs."""
# An id run is a run of the shape that holds a "1". Both patterns start with a literal, so the regex
# engine skips to the next digit at C speed instead of trying a match at every byte: _FIRST covers a
# run from its first digit to its end, _LEAD (on the reversed shape) the run's letters before its
# first digit, plus that digit. Each run is scanned at most twice; linear time.
_FIRST = re.compile(rb"1[a1]*")
_LEAD = re.compile(rb"1a*(?![a1])")


def classify(raw: bytes) -> Classes:
    """Bytes of each class in ``raw`` (UTF-8)."""
    size = len(raw)
    if not size:
        return ZERO
    other = 0 if raw.isascii() else len(raw.translate(None, _ASCII))
    shape = raw.translate(_SHAPE)
    letters = shape.count(b"a")
    digits = shape.count(b"1")
    ids = 0
    if digits:
        lead = _LEAD.findall(shape[::-1])
        ids = sum(map(len, _FIRST.findall(shape))) + sum(map(len, lead)) - len(lead)
    word = letters + raw.count(b" ") - (ids - digits)
    return (word, ids, size - word - ids - other, other)


def add(a: Sequence[int], b: Sequence[int]) -> Classes:
    """Class-wise sum."""
    return (a[0] + b[0], a[1] + b[1], a[2] + b[2], a[3] + b[3])


def sub(a: Sequence[int], b: Sequence[int]) -> Classes:
    """Class-wise difference, never below zero (image bytes are measured apart and may overlap)."""
    return (max(0, a[0] - b[0]), max(0, a[1] - b[1]), max(0, a[2] - b[2]), max(0, a[3] - b[3]))


def parse_classes(value: object) -> Classes | None:
    """Four non-negative integers, or None (a malformed value is never learned from)."""
    if not isinstance(value, list | tuple) or len(value) != 4:
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 1 << 40 for v in value):
        return None
    return (value[0], value[1], value[2], value[3])


@dataclass(frozen=True, slots=True)
class Rates:
    """Tokens per byte of each class (margin included) and how each was obtained."""

    per_byte: tuple[float, float, float, float]
    observations: tuple[int, int, int, int]
    learned: bool

    def tokens(self, classes: Sequence[int]) -> int:
        """Conservative tokens of a class mix."""
        total = 0.0
        for count, rate in zip(classes, self.per_byte, strict=True):
            total += count * rate
        return math.ceil(total)

    def blended(self, classes: Sequence[int]) -> float:
        """Tokens per byte of a class mix (the fallback rate for an empty mix)."""
        size = sum(classes)
        if not size:
            return max(self.per_byte)
        return self.tokens(classes) / size

    def describe(self) -> dict[str, object]:
        """The ``budget_result.density`` object."""
        classes = {
            name: {
                "tokens_per_byte": round(rate, 4),
                "observations": seen,
                "fallback": seen == 0,
            }
            for name, rate, seen in zip(CLASSES, self.per_byte, self.observations, strict=True)
        }
        return {
            "rule": "per_class",
            "margin": MARGIN,
            "classes": classes,
            "fallback_classes": [name for name, seen in zip(CLASSES, self.observations, strict=True) if not seen],
        }


BYTES = Rates((1.0, 1.0, 1.0, 1.0), (0, 0, 0, 0), False)
"""The seed's estimator: every byte one token."""


def rates_from_scales(scales: Sequence[Sequence[float]]) -> Rates:
    """Rates from each class's recent observation scales (an empty list: 1 token per byte)."""
    per_byte: list[float] = []
    seen: list[int] = []
    for prior, recent in zip(PRIOR, scales, strict=True):
        if recent:
            per_byte.append(min(RATE_RANGE[1], max(recent) * prior * MARGIN))
        else:
            per_byte.append(FALLBACK_RATE)
        seen.append(len(recent))
    return Rates(tuple(per_byte), tuple(seen), any(seen))  # type: ignore[arg-type]


def observation_scales(classes: Sequence[int], tokens: int) -> list[float | None]:
    """What one observation teaches each class: its scale, or None where the class is too small.

    ``tokens`` is what the server counted for exactly ``classes``. The whole observation is
    rejected (all None) when it is too small or its overall density is implausible.
    """
    size = sum(classes)
    if size < MIN_OBSERVATION_BYTES or tokens <= 0:
        return [None] * 4
    if not RATE_RANGE[0] <= tokens / size <= RATE_RANGE[1]:
        return [None] * 4
    prior_tokens = sum(count * prior for count, prior in zip(classes, PRIOR, strict=True))
    scale = tokens / prior_tokens
    return [
        scale if count >= MIN_CLASS_BYTES and count * prior >= MIN_SHARE * prior_tokens else None
        for count, prior in zip(classes, PRIOR, strict=True)
    ]


def merged(scales: Sequence[Sequence[float]], learned: Iterable[float | None]) -> list[list[float]]:
    """``scales`` with one observation's per-class scales appended (bounded to KEEP_SCALES)."""
    out = [list(recent) for recent in scales]
    for index, value in enumerate(learned):
        if value is not None:
            out[index] = [*out[index], round(value, 5)][-KEEP_SCALES:]
    return out
