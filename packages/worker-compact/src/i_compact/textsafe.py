"""UTF-8 safety: text with lone surrogates (malformed Unicode) must never crash a step.

The rule is i_protocol's (``jsonsafe.replace_surrogates``, ``map_strings``): every lone surrogate
becomes U+FFFD, a valid pair its character.
"""

from __future__ import annotations

from typing import Any

from i_protocol.jsonsafe import map_strings
from i_protocol.jsonsafe import replace_surrogates as scrub

__all__ = ["scrub", "scrub_value"]


def scrub_value(value: Any) -> Any:
    """A JSON-shaped value with every string (keys included) scrubbed."""
    return map_strings(value, scrub)
