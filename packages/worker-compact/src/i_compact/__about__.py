"""Version of the i-worker-compact distribution."""

__version__ = "0.2.11"
# The i-protocol versions this package works with: pyproject's requirement, checked by the
# console script before anything imports i_protocol (preflight.py; scripts/check-releases compares them).
NEEDS_PROTOCOL = ">=0.2.6,<0.3"
