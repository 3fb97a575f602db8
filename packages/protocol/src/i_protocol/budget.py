"""The budget verdict read from a ``context_budget`` answer: parsed once, typed, one reader for all.

A budget worker answers with the complete request data plus ``budget_result``; the host, and the
compactor that receives that output in ``compact_plan``, read only the fields below (any
replacement must provide ``fits``; every other field is optional and absent means "unknown",
never 0). The whole ``budget_result`` stays available as ``raw``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import ProtocolError


def _count(result: dict[str, Any], key: str) -> int | None:
    value = result.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True, slots=True)
class BudgetVerdict:
    """What the host needs of one ``budget_result``."""

    fits: bool
    estimate: int | None
    capacity: int | None
    comparable_estimate: int | None
    recommend_compact: bool
    estimate_method: str | None
    reasons: tuple[str, ...]
    per_call_bytes: int | None
    provisional: bool
    """The estimate rests mostly on text classes never observed (1 token per byte): a guess."""
    raw: dict[str, Any]
    trigger: int | None = None
    """The estimate at which the budget recommends compaction."""
    output_reserve: int | None = None
    """The tokens kept free for the reply (``capacity`` is the window less this and the margin)."""
    cut_estimates: object = None
    """``cut_estimates`` as sent (extension ``cut_estimates``; its reader validates it)."""

    @classmethod
    def parse(cls, output: object) -> BudgetVerdict:
        """The verdict in a ``context_budget`` answer; ProtocolError when it has no boolean ``fits``."""
        result = output.get("budget_result") if isinstance(output, dict) else None
        if not isinstance(result, dict) or not isinstance(result.get("fits"), bool):
            raise ProtocolError("context_budget returned no budget_result with a boolean 'fits'")
        reasons = result.get("reasons")
        tool_budget = result.get("tool_output_budget")
        method = result.get("estimate_method")
        return cls(
            fits=result["fits"],
            estimate=_count(result, "estimate"),
            capacity=_count(result, "capacity"),
            comparable_estimate=_count(result, "comparable_estimate"),
            recommend_compact=result.get("recommend_compact") is True,
            estimate_method=method if isinstance(method, str) else None,
            reasons=tuple(r for r in reasons if isinstance(r, str)) if isinstance(reasons, list) else (),
            per_call_bytes=_count(tool_budget, "per_call_bytes") if isinstance(tool_budget, dict) else None,
            provisional=result.get("provisional") is True,
            raw=result,
            trigger=_count(result, "trigger"),
            output_reserve=_count(result, "output_reserve"),
            cut_estimates=result.get("cut_estimates"),
        )

    @classmethod
    def find(cls, output: object) -> BudgetVerdict | None:
        """``parse``, or None when ``output`` carries no readable ``budget_result`` (a reader that
        can work without one: the compactor declines, or follows a forced run)."""
        try:
            return cls.parse(output)
        except ProtocolError:
            return None

    def figures(self) -> dict[str, Any]:
        """The verdict's figures as a plain object (what a record keeps of the budget)."""
        return {
            "fits": self.fits,
            "estimate": self.estimate,
            "comparable_estimate": self.comparable_estimate,
            "trigger": self.trigger,
            "capacity": self.capacity,
            "output_reserve": self.output_reserve,
            "recommend_compact": self.recommend_compact,
        }

    @property
    def anchored(self) -> bool:
        """The estimate rests on real usage of an earlier request of this history."""
        return self.estimate_method == "usage_anchor"

    def explain(self) -> str:
        """The budget's own reasons in one sentence (or a generic one)."""
        return "; ".join(self.reasons) or (
            f"estimated input {self.estimate} tokens is over the input capacity {self.capacity}"
            if self.estimate is not None and self.capacity is not None
            else "the budget worker says it does not fit"
        )
