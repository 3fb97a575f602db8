"""Context budget worker for the i agent runtime.

The estimator is importable for other hosts and for tests; the i core itself talks to this
package only through the ``context_budget`` event of the ``i-budget`` worker.
"""

from typing import TYPE_CHECKING

from .__about__ import __version__

if TYPE_CHECKING:
    from .density import CLASSES, Rates, classify
    from .estimate import Observation, Outcome, budget_result, comparable_estimate, estimate_budget
    from .measure import history_fingerprint, wire_view
    from .policy import Policy, parse_policy

# Imported on first use, so that the console script's i-protocol check (preflight) runs before
# anything that imports i_protocol.
_LAZY = {
    "CLASSES": "density",
    "Observation": "estimate",
    "Outcome": "estimate",
    "Policy": "policy",
    "Rates": "density",
    "budget_result": "estimate",
    "classify": "density",
    "comparable_estimate": "estimate",
    "estimate_budget": "estimate",
    "history_fingerprint": "measure",
    "parse_policy": "policy",
    "wire_view": "measure",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "CLASSES",
    "Observation",
    "Outcome",
    "Policy",
    "Rates",
    "__version__",
    "budget_result",
    "classify",
    "comparable_estimate",
    "estimate_budget",
    "history_fingerprint",
    "parse_policy",
    "wire_view",
]
