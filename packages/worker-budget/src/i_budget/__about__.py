"""Version of the i-worker-budget distribution."""

__version__ = "0.2.1"
