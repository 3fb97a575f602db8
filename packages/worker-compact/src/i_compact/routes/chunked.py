"""``before_compact``'s chunk route: a transcript too large for one summary request, in parts."""

from __future__ import annotations

from typing import Any

from i_protocol import Request, WorkerError
from i_protocol.summary import OLDER_CORE_MARGIN, Overhead

from .. import diagnostics as diag
from ..errors import CompactError
from ..failure import fail
from ..state import CompactState
from .model import capped_prompt

_DESCRIBE_LABEL = "(attached for description)]"
_KEEP_LABEL = "(kept after compaction)]"


def chunked(
    state: CompactState,
    request: Request,
    base_prompt: str,
    prompt: str,
    messages: list[dict[str, Any]],
    overhead: Overhead = OLDER_CORE_MARGIN,
) -> Any:
    """The transcript split for several summary requests, or None when one request holds it all;
    each request holds ``overhead`` of the core's wrapper (``before_compact``'s
    ``summary_request_overhead``)."""
    from .. import chunks

    budget = chunks.request_budget(state.request, overhead)
    if budget is None:
        return None  # no capacity known (an old budget worker): one request, as before
    first_tokens, first = chunks.transcript_limit(budget, prompt, summary_so_far=False)
    if budget.transcript_size(messages) <= first:
        return None
    try:
        later_prompt = chunks.update_prompt(base_prompt)
    except WorkerError as exc:
        fail(request, state, "invalid_config", str(exc))
        raise
    tokens, later = chunks.transcript_limit(budget, later_prompt)
    if later < chunks.MIN_CHUNK_BYTES:
        _too_small(request, state, budget, tokens)
    if later > first:
        tokens, later = first_tokens, first
    result = chunks.split(messages, first, later, budget.size, budget.wrapper)
    state.chunking = {
        "limitTokens": {"first": first_tokens, "later": tokens},
        "limitBytes": {"first": first, "later": later},
        "unit": "estimated tokens (provisional rate)" if budget.provisional else "bytes",
        "tokensPerByte": budget.tokens_per_byte,
        "wrapper": budget.wrapper,
        "chunks": len(result.chunks),
        "bytes": result.sizes,
        "shortenedMessages": result.shortened,
        "batchesSplit": result.batches_split,
        "dividedMessages": result.divided,
    }
    return result


def _too_small(request: Request, state: CompactState, budget: Any, tokens: int) -> None:
    from .. import chunks

    message = (
        f"before_compact: the transcript needs several summary requests, and one that carries the "
        f"summary so far has room for {max(tokens, 0)} tokens of transcript (capacity {budget.capacity} "
        f"- output_reserve {budget.output_reserve} - prompt - {chunks.FRAME_MARGIN_TOKENS}), less than "
        f"{chunks.MIN_CHUNK_BYTES} bytes. Raise budget.context_window, lower max_tokens, shorten the "
        "prompt, or use mode local (summary_request_too_small)"
    )
    fail(request, state, "summary_request_too_small", message)
    raise CompactError(message)


def chunk_route(
    out: dict[str, Any],
    state: CompactState,
    base_prompt: str,
    split: Any,
    summary_images: list[dict[str, Any]],
    retained_images: list[dict[str, Any]],
    images: str,
) -> dict[str, Any]:
    """``out`` with one ``chunks`` entry (prompt + messages) per summary request."""
    from ..chunks import update_prompt

    later = update_prompt(base_prompt)
    parts = split.chunks
    if images == "describe" and summary_images:
        # Several requests cannot share the images: they stay in the history instead.
        parts = [[_relabel(m) for m in chunk] for chunk in parts]
        retained_images, summary_images = summary_images, []
        state.images_downgraded = "describe -> keep (the transcript is summarised in chunks)"
    for key in ("prompt", "messages"):
        out.pop(key, None)
    out["chunks"] = [
        {"prompt": capped_prompt(base_prompt if index == 0 else later, state, out), "messages": chunk}
        for index, chunk in enumerate(parts)
    ]
    out["summary_images"] = summary_images
    out["retained_images"] = retained_images
    state.last_attempt = diag.attempt(
        diag.PREPARED,
        "model_chunks_prepared",
        cut=out.get("cut"),
        chunks=len(parts),
        chunkLimitTokens=(state.chunking or {})["limitTokens"]["later"],
        shortenedMessages=split.shortened or None,
    )
    out["state"] = state.to_json()
    return out


def _relabel(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if message.get("role") == "tool" or not isinstance(content, str) or _DESCRIBE_LABEL not in content:
        return message
    return {**message, "content": content.replace(_DESCRIBE_LABEL, _KEEP_LABEL)}
