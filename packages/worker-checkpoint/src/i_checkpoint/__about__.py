"""Version of the i-worker-checkpoint distribution."""

__version__ = "0.1.2"
# The i-protocol versions this package works with: pyproject's requirement, checked by the
# console script before anything imports i_protocol (preflight.py; scripts/check-releases compares them).
NEEDS_PROTOCOL = ">=0.2.6,<0.3"
