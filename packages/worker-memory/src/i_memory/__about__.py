"""Version of the i-worker-memory distribution."""

__version__ = "0.1.2"
