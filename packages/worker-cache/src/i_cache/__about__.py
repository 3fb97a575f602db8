"""Version of the i-worker-cache distribution."""

__version__ = "0.2.1"
