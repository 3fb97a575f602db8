"""``before_compact``: a local summary, or the model's prompt and prepared messages."""

from __future__ import annotations

from typing import Any

from i_protocol import Request

from .. import diagnostics as diag
from ..config import image_mode
from ..errors import CompactError
from ..failure import fail, load_config
from ..state import CompactState


def before_compact(data: dict[str, Any], request: Request, worker_line: str) -> dict[str, Any]:
    """Return ``prompt`` + prepared ``messages`` (model mode) or a local ``summary``."""
    state = CompactState.from_json(data.get("state"), worker_line)
    messages = data.get("messages")
    if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages) or not messages:
        fail(request, state, "invalid_request", "messages is not a non-empty list of messages")
        raise CompactError("before_compact: data.messages must be a non-empty list of message objects (history[1:cut])")
    config = load_config(request, state)
    images = image_mode(config, data.get("budget"), data.get("model"))
    out = dict(data)
    given = out.pop("prepared", None)  # only the model route can use a prepared summary
    earlier = data.get("summary")
    if isinstance(earlier, str) and earlier.strip():
        state.last_attempt = diag.attempt(diag.PREPARED, "summary_from_earlier_hook", cut=data.get("cut"))
        out["state"] = state.to_json()
        return out
    out.pop("summary", None)
    if config.mode == "local" or (state.fallback == "local" and state.cut == data.get("cut")):
        from .local import local_route

        return local_route(out, state, config, images)
    from .model import model_route

    if given is not None:
        out["prepared"] = given
    return model_route(out, state, config, images, request)
