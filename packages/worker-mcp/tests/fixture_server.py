"""A real MCP stdio server built with the SDK, for the tests: text, image, error, crash and hang tools.

Each start appends a line to the file named by ``FIXTURE_LOG`` (when set), so a test can count
how often the worker started it; ``env_value`` shows what reached the server's environment.
"""

from __future__ import annotations

import asyncio
import base64
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

if os.environ.get("FIXTURE_LOG"):
    with open(os.environ["FIXTURE_LOG"], "a", encoding="utf-8") as log:
        log.write(f"start {os.getpid()}\n")

app = MCPServer("fixture")


@app.tool()
def echo(text: str) -> str:
    """Echo the text back."""
    return f"echo: {text}"


@app.tool()
def picture() -> Image:
    """Return a 1x1 PNG."""
    return Image(data=PNG, format="png")


@app.tool()
def env_value(name: str) -> str:
    """The value of an environment variable of this server (empty when unset)."""
    return os.environ.get(name, "")


@app.tool()
def crash() -> str:
    """Exit the server in the middle of the call."""
    os._exit(3)


@app.tool()
async def hang() -> str:
    """Never answer."""
    await asyncio.sleep(3600)
    return "late"


if __name__ == "__main__":
    app.run()
