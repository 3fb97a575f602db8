"""Version of the i-worker-cache distribution."""

__version__ = "0.1.1"
