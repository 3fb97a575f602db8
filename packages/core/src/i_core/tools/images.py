"""Image checks shared by every tool (built-in and external) and the ``view_image`` tool."""

from __future__ import annotations

import base64
import binascii
import os
import stat
from typing import Any

from i_protocol.errors import FileTooLarge
from i_protocol.files import read_bytes

from ..errors import ToolError
from .arguments import Arguments
from .contract import Prepared, ToolContext, ToolResult
from .paths import display, resolve
from .text import printable

MAX_IMAGE_BYTES = 8 * 1024 * 1024
MAX_IMAGES_PER_BATCH = 8
IMAGE_MIMES = ("image/png", "image/jpeg", "image/gif", "image/webp")
# Base64 of MAX_IMAGE_BYTES plus padding slack: longer text is refused before decoding it.
_MAX_BASE64_CHARS = (MAX_IMAGE_BYTES + 2) // 3 * 4 + 4


def image_mime(data: bytes) -> str | None:
    """The image type ``data`` starts with (PNG/JPEG/GIF/WebP by magic signature), else None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def check_image(url: object) -> bytes:
    """The decoded bytes of a ``data:image/...;base64,`` URL, checked by signature and size."""
    if not isinstance(url, str):
        raise ToolError(f"image url must be a string, got {type(url).__name__}")
    if not url.startswith("data:"):
        raise ToolError(f"image url {url[:40]!r} is not a data URL; only base64 data URLs are accepted")
    header, sep, payload = url.partition(",")
    if not sep:
        raise ToolError("image data URL has no ',' before its data")
    mime, _, encoding = header[5:].partition(";")
    mime = mime.strip().lower()
    if encoding.strip().lower() != "base64":
        raise ToolError(f"image data URL {header[:60]!r} is not base64-encoded")
    if mime not in IMAGE_MIMES:
        raise ToolError(f"image type {mime[:40]!r} is not supported; use one of {', '.join(IMAGE_MIMES)}")
    if len(payload) > _MAX_BASE64_CHARS:
        raise ToolError(f"image is larger than {MAX_IMAGE_BYTES} bytes (8 MiB)")
    try:
        data = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise ToolError("image data URL is not valid base64")
    if len(data) > MAX_IMAGE_BYTES:
        raise ToolError(f"image is {len(data)} bytes, over the {MAX_IMAGE_BYTES}-byte (8 MiB) limit")
    actual = image_mime(data)
    if actual is None:
        raise ToolError(f"image declared as {mime} does not start with a PNG, JPEG, GIF or WebP signature")
    if actual != mime:
        raise ToolError(f"image declared as {mime} is really {actual}")
    return data


def check_images(images: object) -> None:
    """Check a result's ``images`` list: at most 8 ``image_url`` parts, each passing ``check_image``."""
    if not isinstance(images, list):
        raise ToolError(f"images must be a list, got {type(images).__name__}")
    if len(images) > MAX_IMAGES_PER_BATCH:
        raise ToolError(f"{len(images)} images in one result; at most {MAX_IMAGES_PER_BATCH} are allowed")
    for index, part in enumerate(images):
        url = _part_url(part)
        if url is None:
            expected = '{"type": "image_url", "image_url": {"url": ...}}'
            raise ToolError(f"images[{index}]: expected {expected}, got an entry {_kind(part)}")
        try:
            check_image(url)
        except ToolError as exc:
            raise ToolError(f"images[{index}]: {exc}")


def tool_images(images: object) -> list[dict[str, Any]]:
    """One tool result's ``images`` as fresh ``image_url`` parts holding only the checked URL.

    Anything but image parts is refused: the parts go into a user-role message, so a text entry
    would put the tool's words in the user's mouth. The ``ToolError`` reads after "tool X returned".
    """
    if not isinstance(images, list):
        raise ToolError(f"images as {type(images).__name__}, not a list; only a list of image_url parts is accepted")
    if len(images) > MAX_IMAGES_PER_BATCH:
        raise ToolError(f"{len(images)} images; at most {MAX_IMAGES_PER_BATCH} per result are accepted")
    parts: list[dict[str, Any]] = []
    for index, part in enumerate(images):
        if not isinstance(part, dict) or part.get("type") != "image_url":
            raise ToolError(f"an images entry {_kind(part)}; only image_url parts are accepted")
        url = _part_url(part)
        if url is None:
            raise ToolError(f'an image_url entry without {{"image_url": {{"url": ...}}}} (images[{index}])')
        try:
            check_image(url)
        except ToolError as exc:
            raise ToolError(f"an invalid image (images[{index}]: {exc})")
        parts.append({"type": "image_url", "image_url": {"url": url}})
    return parts


def _kind(part: object) -> str:
    """How a refused images entry is named: ``of type 'text'``, ``that is a str``."""
    if not isinstance(part, dict):
        return f"that is a {type(part).__name__}, not an object"
    kind = part.get("type")
    if kind is None:
        return "without a type"
    if isinstance(kind, str) and len(kind) > 40:
        kind = kind[:40] + "..."
    return f"of type {printable(repr(kind))}"


def _part_url(part: Any) -> object | None:
    if not isinstance(part, dict) or part.get("type") != "image_url":
        return None
    inner = part.get("image_url")
    if not isinstance(inner, dict) or "url" not in inner:
        return None
    url: object = inner["url"]
    return url


def image_part(mime: str, data: bytes) -> dict[str, Any]:
    """An ``image_url`` content part carrying ``data`` as a base64 data URL."""
    url = f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"
    return {"type": "image_url", "image_url": {"url": url}}


def prepare_view_image(arguments: object, ctx: ToolContext) -> Prepared:
    """Validate a ``view_image`` call (``path`` to a PNG/JPEG/GIF/WebP file up to 8 MiB)."""
    args = Arguments("view_image", arguments, ("path",))
    path = resolve("view_image", args.string("path"), ctx.workspace)
    shown = display(path, ctx.workspace)

    def run(c: ToolContext) -> ToolResult:
        try:
            info = os.stat(path)
        except FileNotFoundError:
            raise ToolError(f"view_image: {shown}: no such file")
        if stat.S_ISDIR(info.st_mode):
            raise ToolError(f"view_image: {shown}: is a directory")
        if not stat.S_ISREG(info.st_mode):
            raise ToolError(f"view_image: {shown}: not a regular file")
        if info.st_size > MAX_IMAGE_BYTES:
            raise ToolError(f"view_image: {shown}: {info.st_size} bytes, over the {MAX_IMAGE_BYTES}-byte (8 MiB) limit")
        try:
            data = read_bytes(path, MAX_IMAGE_BYTES)
        except FileTooLarge:  # grown since the stat
            raise ToolError(f"view_image: {shown}: over the {MAX_IMAGE_BYTES}-byte (8 MiB) limit") from None
        mime = image_mime(data)
        if mime is None:
            raise ToolError(f"view_image: {shown}: not a PNG, JPEG, GIF or WebP image (checked by its signature)")
        return ToolResult(f"Image attached: {shown} ({mime}, {len(data)} bytes)", [image_part(mime, data)])

    return Prepared("view_image", dict(args.values), f"view_image {shown}", path, None, run)
