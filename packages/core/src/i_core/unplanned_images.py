"""Images with no planned cost are left out of the request, never fatal and never lost.

Seed ``001_…`` §7: an unknown cost is never counted as 0. While a budget worker runs and no
``budget.image_tokens`` is set, the budget cannot plan an image, so the core does not send it (with
no budget worker nothing is planned at all and images go out as before): each image part is replaced, in what
goes to the budget and to the model only, by a text note saying it was left out and why. The
session keeps the image, so it is sent once ``image_tokens`` is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from i_protocol.history import is_image_part

NOTE = (
    "[an image was left out of this request: its token cost is unknown because budget.image_tokens is not "
    "set in the user's config.json; the user has been told. Do not guess what it shows.]"
)
HINT = (
    "{count} image(s) were not sent to the model: their cost is unknown. Set budget.image_tokens in "
    "config.json (the most tokens one image costs on your model, e.g. 1600 for Anthropic) and they are "
    "sent from the next request on; the session keeps them."
)


def planned(budget: Mapping[str, Any]) -> bool:
    """True when images have a planned cost (``budget.image_tokens`` is a positive integer)."""
    cost = budget.get("image_tokens")
    return isinstance(cost, int) and not isinstance(cost, bool) and cost > 0


def leave_out(history: list[dict[str, Any]], budget: Mapping[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """``history`` as it may be sent, and how many images were left out of it.

    Unchanged (the same list) when images have a planned cost or there are none; otherwise a copy in
    which each ``image_url`` part is a text part holding ``NOTE`` (marked ``_image_left_out``).
    """
    if planned(budget):
        return history, 0
    count = 0
    sent: list[dict[str, Any]] = []
    for message in history:
        content = message.get("content")
        if isinstance(content, list) and any(_is_image(part) for part in content):
            parts = []
            for part in content:
                if _is_image(part):
                    count += 1
                    parts.append({"type": "text", "text": NOTE, "_image_left_out": True})
                else:
                    parts.append(part)
            message = {**message, "content": parts}
        sent.append(message)
    return (sent, count) if count else (history, 0)


_is_image = is_image_part
