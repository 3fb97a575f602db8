"""i-worker-mcp: the tools of MCP stdio servers (``config_dir/mcp.json``) as tools of ``i``."""

from .__about__ import __version__

__all__ = ["__version__"]
