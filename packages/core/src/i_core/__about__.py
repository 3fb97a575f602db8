"""Version of the i-core distribution."""

__version__ = "0.3.1"
