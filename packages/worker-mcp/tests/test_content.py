"""MCP tool results as the answer of the tool event."""

from __future__ import annotations

import mcp.types as types

from i_mcp.content import tool_answer

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def result(*content, **fields) -> types.CallToolResult:
    return types.CallToolResult(content=list(content), **fields)


def test_text_blocks_are_joined_and_images_become_data_urls():
    answer = tool_answer(
        result(
            types.TextContent(type="text", text="first"),
            types.ImageContent(type="image", data=PNG, mime_type="image/png"),
            types.TextContent(type="text", text="second"),
        )
    )
    assert answer == {
        "output": "first\n\nsecond",
        "images": [{"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}],
    }


def test_an_image_only_result_says_so_in_its_text():
    answer = tool_answer(result(types.ImageContent(type="image", data=PNG, mime_type="image/png")))
    assert answer["output"] == "(1 image)" and len(answer["images"]) == 1


def test_what_cannot_be_shown_is_named_not_dropped():
    text = types.TextResourceContents(uri="file:///notes.txt", text="the notes")
    blob = types.BlobResourceContents(uri="file:///a.bin", blob="AAAA", mime_type="application/octet-stream")
    answer = tool_answer(
        result(
            types.EmbeddedResource(type="resource", resource=text),
            types.EmbeddedResource(type="resource", resource=blob),
            types.AudioContent(type="audio", data="AAAA", mime_type="audio/wav"),
            types.ResourceLink(type="resource_link", uri="file:///b.txt", name="b"),
        )
    )
    assert answer["output"].split("\n\n") == [
        "the notes",
        "[binary resource file:///a.bin (application/octet-stream) not shown]",
        "[audio (audio/wav) not shown]",
        "[resource link: file:///b.txt b]",
    ]
    assert "images" not in answer


def test_structured_content_is_shown_only_without_content_blocks():
    assert tool_answer(result(structured_content={"n": 1}))["output"] == '{"n":1}'
    both = result(types.TextContent(type="text", text="1"), structured_content={"n": 1})
    assert tool_answer(both)["output"] == "1"


def test_an_mcp_error_result_is_marked_as_an_error():
    answer = tool_answer(result(types.TextContent(type="text", text="no such file"), is_error=True))
    assert answer == {"output": "no such file", "is_error": True}
    assert "is_error" not in tool_answer(result(types.TextContent(type="text", text="ok")))
