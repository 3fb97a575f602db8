"""Version of the i-worker-mcp distribution."""

__version__ = "0.1.1"
