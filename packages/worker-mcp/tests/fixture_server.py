"""A real MCP stdio server built with the SDK, for the tests: text, image, error, crash and hang tools.

Each start appends a line to the file named by ``FIXTURE_LOG`` (when set), so a test can count
how often the worker started it; ``env_value`` shows what reached the server's environment.
"""

from __future__ import annotations

import asyncio
import base64
import os
import sys
import time

import mcp.types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.utilities.types import Image

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)

if os.environ.get("FIXTURE_LOG"):
    with open(os.environ["FIXTURE_LOG"], "a", encoding="utf-8") as log:
        log.write(f"start {os.getpid()}\n")
if os.environ.get("FIXTURE_FAIL_START"):  # like a server given a folder it cannot use
    print(os.environ["FIXTURE_FAIL_START"], file=sys.stderr, flush=True)
    sys.exit(1)
if os.environ.get("FIXTURE_START_DELAY"):  # a slow first start (npx, uvx)
    time.sleep(float(os.environ["FIXTURE_START_DELAY"]))


class _Server(MCPServer):
    async def list_tools(self) -> list[types.Tool]:
        """The tools, ``as_task`` marked as runnable only as an MCP task (``execution.taskSupport``)."""
        tools = await super().list_tools()
        return [
            tool.model_copy(update={"execution": types.ToolExecution(task_support="required")})
            if tool.name == "as_task"
            else tool
            for tool in tools
        ]


app = _Server("fixture")


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


@app.tool()
async def steps(count: int, every: float, ctx: Context, stall: float = 0.0) -> str:
    """Report progress ``count`` times ``every`` seconds apart, then stall ``stall`` seconds, then answer."""
    for step in range(count):
        await asyncio.sleep(every)
        await ctx.report_progress(step + 1, count, f"step {step + 1}")
    await asyncio.sleep(stall)
    return f"{count} steps"


@app.tool()
def big(megabytes: int) -> str:
    """A text result of ``megabytes`` MB."""
    return "x" * (megabytes * 1024 * 1024)


@app.tool()
def as_task() -> str:
    """A tool that only runs as an MCP task."""
    return "ran"


if __name__ == "__main__":
    app.run()
