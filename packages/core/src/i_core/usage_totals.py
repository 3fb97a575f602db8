"""What the console's ``/status`` adds up: the usage of every model request this console sent and,
where config.json gives ``prices`` for the model of a request, its cost (``prices``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .prices import Prices
    from .providers import ModelReply


@dataclass
class UsageTotals:
    """A ``model.ReplyObserver``: usage summed over replies, and their cost at the prices in force
    when each came (``/model`` may change them)."""

    prices: Callable[[], Prices | None]
    requests: int = 0
    tokens: dict[str, int] = field(default_factory=dict)
    unknown_usage: int = 0
    cost: float = 0.0
    unpriced: int = 0
    """Requests with usage but no price (their model has no ``prices``)."""
    currencies: set[str] = field(default_factory=set)

    def request_started(self) -> None:
        """Counted when its reply comes."""

    def reply_received(self, reply: ModelReply) -> None:
        """Add the reply's usage, and its cost when its model has prices."""
        self.requests += 1
        usage = reply.usage or {}
        if not isinstance(usage.get("input_tokens"), int) or not isinstance(usage.get("output_tokens"), int):
            self.unknown_usage += 1
            return
        for key, value in usage.items():
            if isinstance(value, int) and not isinstance(value, bool):
                self.tokens[key] = self.tokens.get(key, 0) + value
        prices = self.prices()
        cost = prices.cost(usage) if prices is not None else None
        if prices is None or cost is None:
            self.unpriced += 1
            return
        self.cost += cost
        self.currencies.add(prices.currency)

    def cost_line(self) -> str:
        """The cost of the requests counted, and what it leaves out."""
        if not self.currencies:
            return "cost unknown: config.json gives no prices for the model (prices: input_per_mtok, output_per_mtok)"
        line = f"cost {self.cost:.4f} {'/'.join(sorted(self.currencies))}"
        left = self.unpriced + self.unknown_usage
        if left:
            line += f" (not counting {left} request(s) without prices or usage)"
        return line
