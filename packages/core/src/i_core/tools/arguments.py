"""Checks a tool call's arguments into plain typed values, with messages the model can act on."""

from __future__ import annotations

import math
from typing import Any

from ..errors import ToolError
from .text import printable


class Arguments:
    """One call's arguments: rejects unknown names; ``None`` counts as absent for optional ones."""

    def __init__(self, tool: str, arguments: Any, allowed: tuple[str, ...]) -> None:
        if not isinstance(arguments, dict):
            raise ToolError(f"{tool}: arguments must be a JSON object, got {type(arguments).__name__}")
        unknown = sorted(printable(str(key)) for key in arguments if key not in allowed)
        if unknown:
            raise ToolError(f"{tool}: unknown argument(s): {', '.join(unknown)}; expected: {', '.join(allowed)}")
        self.tool = tool
        self.values = arguments

    def string(self, key: str, *, empty_ok: bool = False) -> str:
        """A required string argument."""
        value = self.values.get(key)
        if value is None:
            raise ToolError(f"{self.tool}: missing required argument '{key}'")
        if not isinstance(value, str):
            raise ToolError(f"{self.tool}: argument '{key}' must be a string, got {type(value).__name__}")
        if not value and not empty_ok:
            raise ToolError(f"{self.tool}: argument '{key}' must not be empty")
        return value

    def optional_string(self, key: str) -> str | None:
        """An optional non-empty string argument, or None."""
        if self.values.get(key) is None:
            return None
        return self.string(key)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        """An optional integer argument within [minimum, maximum]."""
        value = self.values.get(key)
        if value is None:
            return default
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise ToolError(f"{self.tool}: argument '{key}' must be an integer, got {type(value).__name__}")
        if not minimum <= value <= maximum:
            raise ToolError(f"{self.tool}: argument '{key}' must be between {minimum} and {maximum}, got {value}")
        return value

    def number(self, key: str, default: float, maximum: float) -> float:
        """An optional positive number argument up to ``maximum``."""
        value = self.values.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ToolError(f"{self.tool}: argument '{key}' must be a number, got {printable(repr(value))}")
        if not 0 < value <= maximum:
            raise ToolError(
                f"{self.tool}: argument '{key}' must be greater than 0 and at most {maximum:g}, got {value}"
            )
        return float(value)

    def boolean(self, key: str, default: bool) -> bool:
        """An optional boolean argument."""
        value = self.values.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise ToolError(f"{self.tool}: argument '{key}' must be true or false, got {printable(repr(value))}")
        return value
