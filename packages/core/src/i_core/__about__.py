"""Version of the i-core distribution."""

__version__ = "0.2.0"
