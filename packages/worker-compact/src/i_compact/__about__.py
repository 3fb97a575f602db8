"""Version of the i-worker-compact distribution."""

__version__ = "0.2.2"
