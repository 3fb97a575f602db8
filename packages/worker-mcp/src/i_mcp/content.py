"""An MCP tool result as the answer of the ``tool`` event: text, images as data URLs, the error flag.

Text blocks are joined by blank lines; an image block becomes an ``image_url`` part with a
``data:`` URL (the core checks its signature and size like any tool image); an embedded text
resource keeps its text. What the model cannot be given here (audio, binary resources, links)
is named in the text, not dropped silently. Structured content is shown as JSON only when the
result has no content blocks (servers send both; the blocks are the text form of it).
"""

from __future__ import annotations

from typing import Any

import mcp.types as types
import orjson


def tool_answer(result: types.CallToolResult) -> dict[str, Any]:
    """``{"output", "images"?, "is_error"?}`` for ``result``."""
    texts: list[str] = []
    images: list[dict[str, Any]] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            texts.append(block.text)
        elif isinstance(block, types.ImageContent):
            images.append({"type": "image_url", "image_url": {"url": f"data:{block.mime_type};base64,{block.data}"}})
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                texts.append(resource.text)
            else:
                texts.append(f"[binary resource {resource.uri} ({resource.mime_type or 'unknown type'}) not shown]")
        elif isinstance(block, types.AudioContent):
            texts.append(f"[audio ({block.mime_type}) not shown]")
        elif isinstance(block, types.ResourceLink):
            texts.append(f"[resource link: {block.uri}{' ' + block.name if block.name else ''}]")
    if not result.content and result.structured_content is not None:
        texts.append(orjson.dumps(result.structured_content).decode())
    output = "\n\n".join(texts)
    if not output and images:
        output = f"({len(images)} image{'s' if len(images) > 1 else ''})"
    answer: dict[str, Any] = {"output": output}
    if images:
        answer["images"] = images
    if result.is_error:
        answer["is_error"] = True
    return answer
