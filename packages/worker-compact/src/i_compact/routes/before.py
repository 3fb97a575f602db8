"""``before_compact``: a local summary, or the model's prompt and prepared messages."""

from __future__ import annotations

from typing import Any

from i_protocol import Request
from i_protocol.jsonsafe import replace_surrogates as scrub

from .. import diagnostics as diag
from ..errors import CompactError
from ..failure import fail, load_config
from ..redact import redact
from ..settings import image_mode
from ..state import CompactState

MAX_FOCUS = 2000


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
    focus = focus_text(data)
    if config.mode == "local" or (state.fallback == "local" and state.cut == data.get("cut")):
        from .local import local_route

        return _focused(local_route(out, state, config, images, focus), focus)
    from .model import model_route

    if given is not None:
        out["prepared"] = given
    return _focused(model_route(out, state, config, images, request, focus), focus)


def focus_text(data: dict[str, Any]) -> str | None:
    """The ``/compact FOCUS`` text (extension ``focus``) on one line, secret values redacted, at most
    ``MAX_FOCUS`` characters."""
    focus = data.get("focus")
    if not isinstance(focus, str) or not focus.strip():
        return None
    return redact(scrub(" ".join(focus.split())))[:MAX_FOCUS]


def _focused(out: dict[str, Any], focus: str | None) -> dict[str, Any]:
    """The answer says it used the focus (``focus_used``): both routes always do."""
    if focus is not None:
        out["focus_used"] = True
    return out
