"""Version of the i-worker-web distribution."""

__version__ = "0.1.2"
