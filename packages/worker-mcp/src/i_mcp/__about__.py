"""Version of the i-worker-mcp distribution."""

__version__ = "0.2.1"
# The i-protocol versions this package works with: pyproject's requirement, checked by the
# console script before anything imports i_protocol (preflight.py; scripts/check-releases compares them).
NEEDS_PROTOCOL = ">=0.2.6,<0.3"
