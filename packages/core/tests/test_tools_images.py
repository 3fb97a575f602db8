"""Image checks (signature, declared type, size, count) and the view_image tool."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_core.tools import MAX_IMAGE_BYTES, ToolContext, ToolError, check_image, check_images, execute, prepare

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
GIF = b"GIF89a" + b"\x01\x00" * 8
WEBP = b"RIFF\x10\x00\x00\x00WEBPVP8 " + b"\x00" * 8


def url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}"


def part(mime: str, data: bytes) -> dict:
    return {"type": "image_url", "image_url": {"url": url(mime, data)}}


@pytest.mark.parametrize(
    ("mime", "data"), [("image/png", PNG), ("image/jpeg", JPEG), ("image/gif", GIF), ("image/webp", WEBP)]
)
def test_each_type_accepted(mime: str, data: bytes) -> None:
    assert check_image(url(mime, data)) == data


def test_declared_type_must_match_signature() -> None:
    with pytest.raises(ToolError, match="declared as image/png is really image/jpeg"):
        check_image(url("image/png", JPEG))


def test_unknown_signature_and_type() -> None:
    with pytest.raises(ToolError, match="does not start with a PNG, JPEG, GIF or WebP signature"):
        check_image(url("image/png", b"not an image"))
    with pytest.raises(ToolError, match="image type 'image/svg\\+xml' is not supported"):
        check_image(url("image/svg+xml", b"<svg/>"))


def test_only_base64_data_urls() -> None:
    with pytest.raises(ToolError, match="not a data URL"):
        check_image("https://example.com/cat.png")
    with pytest.raises(ToolError, match="not base64-encoded"):
        check_image("data:image/png,rawbytes")
    with pytest.raises(ToolError, match="not valid base64"):
        check_image("data:image/png;base64,@@@@")
    with pytest.raises(ToolError, match="must be a string"):
        check_image(None)


def test_size_limit() -> None:
    exactly = PNG + b"\x00" * (MAX_IMAGE_BYTES - len(PNG))
    assert len(check_image(url("image/png", exactly))) == MAX_IMAGE_BYTES
    with pytest.raises(ToolError, match="8 MiB"):
        check_image(url("image/png", exactly + b"\x00"))


def test_batch_count_and_shape() -> None:
    check_images([part("image/png", PNG)] * 8)
    with pytest.raises(ToolError, match="9 images in one result; at most 8"):
        check_images([part("image/png", PNG)] * 9)
    with pytest.raises(ToolError, match=r"images\[1\]: image declared as image/gif"):
        check_images([part("image/png", PNG), part("image/gif", PNG)])
    with pytest.raises(ToolError, match=r"images\[0\]: expected"):
        check_images([{"type": "text", "text": "hi"}])
    with pytest.raises(ToolError, match="images must be a list"):
        check_images("data:...")


@given(st.text(max_size=80))
def test_check_image_never_crashes_on_text(text: str) -> None:
    try:
        check_image(text)
    except ToolError as exc:
        str(exc).encode("utf-8", "backslashreplace")


@given(st.binary(max_size=64), st.sampled_from(["image/png", "image/jpeg", "image/gif", "image/webp"]))
def test_check_image_arbitrary_bytes(data: bytes, mime: str) -> None:
    try:
        assert check_image(url(mime, data)) == data
    except ToolError:
        pass


def test_view_image(tmp_path: Path) -> None:
    (tmp_path / "pic.gif").write_bytes(GIF)
    ctx = ToolContext(tmp_path)
    prepared = prepare("view_image", {"path": "pic.gif"}, ctx)
    assert prepared.summary == "view_image pic.gif"
    result = execute(prepared, ctx)
    assert result.output == f"Image attached: pic.gif (image/gif, {len(GIF)} bytes)"
    assert result.images == [part("image/gif", GIF)]
    check_images(result.images)


def test_view_image_errors(tmp_path: Path) -> None:
    ctx = ToolContext(tmp_path)
    (tmp_path / "note.txt").write_text("hello")
    (tmp_path / "huge.png").write_bytes(PNG + b"\x00" * MAX_IMAGE_BYTES)
    with pytest.raises(ToolError, match=r"view_image: note.txt: not a PNG, JPEG, GIF or WebP image"):
        execute(prepare("view_image", {"path": "note.txt"}, ctx), ctx)
    with pytest.raises(ToolError, match=r"view_image: huge.png: .* over the 8388608-byte"):
        execute(prepare("view_image", {"path": "huge.png"}, ctx), ctx)
    with pytest.raises(ToolError, match=r"view_image: absent.png: no such file"):
        execute(prepare("view_image", {"path": "absent.png"}, ctx), ctx)
