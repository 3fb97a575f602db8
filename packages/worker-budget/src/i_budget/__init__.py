"""Context budget worker for the i agent runtime.

The estimator is importable for other hosts and for tests; the i core itself talks to this
package only through the ``context_budget`` event of the ``i-budget`` worker.
"""

from .__about__ import __version__
from .density import CLASSES, Rates, classify
from .estimate import Observation, Outcome, budget_result, comparable_estimate, estimate_budget
from .measure import history_fingerprint, wire_view
from .policy import Policy, parse_policy

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
