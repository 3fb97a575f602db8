"""The name the model sees for a server's tool: ``mcp__NAME__TOOL``, always a valid tool name of ``i``.

A tool name of ``i`` is 1-64 characters of ``A-Za-z0-9_-`` (SPEC §3.1); MCP allows more (dots,
128 characters) and server names are free text. When ``mcp__NAME__TOOL`` is not valid as it is,
every other character becomes ``_``, the name is cut to 55 characters and ``_`` plus the first 8
hex digits of the SHA-256 of ``NAME``, NUL, ``TOOL`` is appended: ``mcp__docs__search.pages`` is
``mcp__docs__search_pages_<8 hex>``. The name is the same at every start, so approval policies can
name it; two tools that still meet on one name are refused, naming both.
"""

from __future__ import annotations

import hashlib
import re

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_OTHER = re.compile(r"[^A-Za-z0-9_-]")
_DIGEST_CHARS = 8
_MAX = 64


def exposed_name(server: str, tool: str) -> str:
    """``mcp__SERVER__TOOL``, or its shortened form with a digest suffix when that is no valid name."""
    name = f"mcp__{server}__{tool}"
    if TOOL_NAME.fullmatch(name):
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    return f"{_OTHER.sub('_', name)[: _MAX - _DIGEST_CHARS - 1]}_{digest}"
