"""config.json's ``prices``: what a model's tokens cost, for the console's ``/status``.

``{"input_per_mtok": 3.0, "output_per_mtok": 15.0, "cache_read_per_mtok": 0.3,
"cache_write_per_mtok": 3.75, "currency": "USD"}``: prices per million tokens as the provider's
price page gives them. ``input_per_mtok`` and ``output_per_mtok`` are required; a cache price left
out charges those tokens at the input price; ``currency`` (default ``USD``) is a label only. Every
price is a finite number from 0 to 100000; any other field is an error. The core never guesses a
price: without ``prices`` no cost is shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from .errors import ConfigError

PRICE_FIELDS = ("input_per_mtok", "output_per_mtok", "cache_read_per_mtok", "cache_write_per_mtok")
FIELDS = (*PRICE_FIELDS, "currency")
MAX_PRICE = 100_000
_CURRENCY_SIGNS = "$€£¥"


@dataclass(frozen=True)
class Prices:
    """Prices per million tokens of one model (a validated ``prices`` object)."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    currency: str = "USD"

    def cost(self, usage: dict[str, Any]) -> float | None:
        """What one reply's usage cost; None when its input or output count is unknown.

        ``input_tokens`` is the whole input (cache reads and writes included, as the core counts
        it): the plain part is charged at the input price, the cached parts at theirs.
        """
        tokens_in, tokens_out = _count(usage.get("input_tokens")), _count(usage.get("output_tokens"))
        if tokens_in is None or tokens_out is None:
            return None
        read = _count(usage.get("cache_read_tokens")) or 0
        written = _count(usage.get("cache_creation_tokens")) or 0
        plain = max(0, tokens_in - read - written)
        read_price = self.input_per_mtok if self.cache_read_per_mtok is None else self.cache_read_per_mtok
        write_price = self.input_per_mtok if self.cache_write_per_mtok is None else self.cache_write_per_mtok
        total = plain * self.input_per_mtok + read * read_price + written * write_price
        return (total + tokens_out * self.output_per_mtok) / 1_000_000


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _is_currency(label: str) -> bool:
    # No pattern compiled: config.json is read on every start.
    return 1 <= len(label) <= 8 and all((c.isascii() and c.isalpha()) or c in _CURRENCY_SIGNS for c in label)


def parse_prices(raw: object, where: str) -> Prices | None:
    """``prices`` validated (absent: None); every problem is a ConfigError naming the field."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: prices must be an object such as {{'input_per_mtok': 3, 'output_per_mtok': 15}}")
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        raise ConfigError(f"{where}: prices has unknown field(s): {', '.join(unknown)}; known: {', '.join(FIELDS)}")
    values: dict[str, float | None] = {}
    for name in PRICE_FIELDS:
        value = raw.get(name)
        if value is None and name in ("input_per_mtok", "output_per_mtok"):
            raise ConfigError(f"{where}: prices.{name} is required (a price per million tokens)")
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or not 0 <= value <= MAX_PRICE
        ):
            raise ConfigError(
                f"{where}: prices.{name} must be a number from 0 to {MAX_PRICE} (per million tokens), got {value!r}"
            )
        values[name] = None if value is None else float(value)
    currency = raw.get("currency", "USD")
    if not isinstance(currency, str) or not _is_currency(currency):
        raise ConfigError(f"{where}: prices.currency must be a short label such as USD, got {currency!r}")
    assert values["input_per_mtok"] is not None and values["output_per_mtok"] is not None
    return Prices(
        values["input_per_mtok"],
        values["output_per_mtok"],
        values["cache_read_per_mtok"],
        values["cache_write_per_mtok"],
        currency,
    )
