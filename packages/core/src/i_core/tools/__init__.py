"""The core's built-in tools: ``read``, ``write``, ``edit``, ``glob``, ``search``, ``shell``, ``view_image``,
``recall``.

The agent loop calls ``prepare`` (validation, summary, snapshot) before asking for approval and
``execute`` after it. ``check_image``/``check_images``/``tool_images`` validate images from any tool.
"""

from ..errors import ToolError
from .contract import APPROVAL_TOKEN_ENV, Prepared, Snapshot, ToolContext, ToolResult, normal_env
from .dispatch import FREE_TOOLS, execute, prepare
from .images import MAX_IMAGE_BYTES, MAX_IMAGES_PER_BATCH, check_image, check_images, tool_images
from .schemas import BUILTIN_SCHEMAS

BUILTIN_NAMES = frozenset(schema["name"] for schema in BUILTIN_SCHEMAS)

__all__ = [
    "APPROVAL_TOKEN_ENV",
    "BUILTIN_NAMES",
    "BUILTIN_SCHEMAS",
    "FREE_TOOLS",
    "MAX_IMAGES_PER_BATCH",
    "MAX_IMAGE_BYTES",
    "Prepared",
    "Snapshot",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "check_image",
    "check_images",
    "execute",
    "normal_env",
    "prepare",
    "tool_images",
]
