"""``before_compact``'s model route: the prompt and the prepared transcript (or a cached summary)."""

from __future__ import annotations

from typing import Any

from i_protocol import Request, WorkerError
from i_protocol.jsonsafe import map_strings, replace_surrogates

from .. import diagnostics as diag
from ..allowance import LOCAL_MIN_CHARS, MODEL_RECORD_MAX, local_bounds
from ..failure import count, fail
from ..ledger import Ledger, Statement
from ..settings import CompactConfig, check_prompt
from ..state import CompactState
from .prepared import use_prepared

DESCRIBE_NOTE = (
    "\n\nThe last {count} image(s) of the compacted messages are attached in transcript order "
    "(the [image #k] markers). Describe in the summary what each shows that matters for the task."
)
FOCUS_NOTE = (
    "\n\nThe user asked this summary to focus on: {focus}\nKeep everything that matters for that in full "
    "detail; what does not matter for it may be shortened (the facts the summary must keep still hold)."
)
SUMMARY_CAP_NOTE = (
    "\n\nThe context window is small: keep the whole summary under {words} words (it is cut off at "
    "{tokens} tokens, and a cut-off summary is discarded)."
)


def model_route(
    out: dict[str, Any],
    state: CompactState,
    config: CompactConfig,
    images: str,
    request: Request,
    focus: str | None = None,
) -> dict[str, Any]:
    """``out`` with ``prompt`` + ``messages`` (or ``chunks``), or a cached ``summary``; ``focus``
    (``/compact FOCUS``) ends the prompt, so every chunk's and the cache key hold it."""
    from ..transcript import analyse, prepare

    base_prompt, source = _base_prompt(out, state, config, request)
    if focus is not None:
        base_prompt += FOCUS_NOTE.format(focus=focus)
    messages = out["messages"]
    analysis = analyse(messages)
    prepared = prepare(messages, analysis, images)
    ledger, limit = _model_ledger(messages, analysis, config)
    state.ledger = _record(ledger, limit)
    state.sections = None
    if config.model_sections:
        state.sections, ledger.statement = _sections(messages, state, config)
        if ledger.statement is not None:  # the task statement rides on top of the record's bound
            state.ledger = _record(ledger, limit)
    summary_images = map_strings(prepared.summary_images, replace_surrogates)
    prompt = _with_image_note(base_prompt, summary_images, state, request)
    state.prompt_source = source
    state.transcript = prepared.stats
    if _cached(out, state, request, prompt, prepared, summary_images, config.cache):
        return out
    retained_images = map_strings(prepared.retained_images, replace_surrogates)
    from i_protocol.summary import read_overhead

    from .chunked import chunk_route, chunked

    split = chunked(state, request, base_prompt, prompt, prepared.messages, read_overhead(out))
    if split is not None and len(split.chunks) > 1:
        return chunk_route(out, state, base_prompt, split, summary_images, retained_images, images)
    out.pop("chunks", None)
    prompt = capped_prompt(prompt, state, out)
    out["prompt"] = prompt
    out["messages"] = split.chunks[0] if split is not None else prepared.messages  # built from scrubbed strings only
    out["summary_images"] = summary_images
    out["retained_images"] = retained_images
    state.last_attempt = diag.attempt(
        diag.PREPARED,
        "model_prompt_prepared",
        cut=out.get("cut"),
        promptChars=len(prompt),
        shortenedMessages=split.shortened if split is not None and split.shortened else None,
    )
    out["state"] = state.to_json()
    return out


def _base_prompt(out: dict[str, Any], state: CompactState, config: CompactConfig, request: Request) -> tuple[str, str]:
    from ..prompt import render_prompt, select_prompt

    try:
        template, source = select_prompt(config, out.get("prompt"))
        workspace = out.get("workspace")
        return render_prompt(template, request.workspace or (workspace if isinstance(workspace, str) else None)), source
    except WorkerError as exc:
        fail(request, state, "invalid_config", str(exc))
        raise


def _with_image_note(prompt: str, summary_images: list[Any], state: CompactState, request: Request) -> str:
    if not summary_images:
        return prompt
    try:
        return check_prompt(prompt + DESCRIBE_NOTE.format(count=len(summary_images)), "the prompt plus image note")
    except WorkerError as exc:
        fail(request, state, "invalid_config", str(exc))
        raise


def _cached(
    out: dict[str, Any],
    state: CompactState,
    request: Request,
    prompt: str,
    prepared: Any,
    images: list[Any],
    cache: bool = True,
) -> bool:
    """Answer with the core's prepared summary or from the summary cache when either holds this very
    request (and remember its key: the preparation's key is what a prepared summary is checked by)."""
    from .. import summary_cache

    key = summary_cache.cache_key(prompt, prepared.messages, images, out.get("model"))
    state.prepared_key = key
    if use_prepared(out, state, key, prepared.retained_images):
        return True
    if not cache:
        return False
    state.cache_key = key
    cached = summary_cache.lookup(request.paths.cache_dir, key)
    if cached is None:
        return False
    out["summary"] = cached
    state.cache_hit = True
    state.last_attempt = diag.attempt(diag.PREPARED, "summary_cache_hit", cut=out.get("cut"))
    out["state"] = state.to_json()
    if prepared.retained_images:
        out["retained_images"] = map_strings(prepared.retained_images, replace_surrogates)
    return True


def _sections(
    messages: list[dict[str, Any]], state: CompactState, config: CompactConfig
) -> tuple[str | None, Statement | None]:
    """The coding sections (requests, action log) within the room the plan left, and the task
    statement the record holds on top of its bound (the same room as the local summary's)."""
    from ..actions import analyse_cached, carries_statement, counted_statement, render, statement_of, statement_size
    from ..allowance import planned_prefix, statement_room
    from ..history import approx_size

    coding = analyse_cached(messages)
    if not (coding.actions or coding.requests or coding.statement):
        return None, None
    planned = state.sections_max_bytes
    if planned is not None and planned <= 0:
        return None, None
    if planned is None and state.summary_max_tokens is not None:
        return None, None  # a small window: the reply has the room
    prefix = planned_prefix(state, {"cut": state.cut, "messages": messages})
    size = prefix if prefix is not None else sum(approx_size(m) for m in messages)
    critical = local_bounds(messages, config.local_max_chars, prefix)[1]
    on_top = statement_room(size, critical, statement_size(messages)[1], carries_statement(messages))
    room = critical if planned is None else max(0, planned - on_top)
    if on_top:
        statement = statement_of(coding, on_top)
    else:  # no room on top: it counts in the room like the rest
        statement, cost = counted_statement(coding, room)
        room -= cost
    return render(coding, room, held=state.ledger or "") or None, statement


def _model_ledger(messages: list[dict[str, Any]], analysis: Any, config: CompactConfig) -> tuple[Ledger, int]:
    """The prefix's ledger and the record's bound at its largest; ``after_compact`` fits it to the
    reply. The task statement is the sections' (:func:`_sections`): none unless they are written."""
    from ..ledger import build

    _, critical = local_bounds(messages, config.local_max_chars, None)
    ledger = build(messages, analysis)
    ledger.statement = None
    return ledger, min(MODEL_RECORD_MAX, max(critical, LOCAL_MIN_CHARS))


def _record(ledger: Ledger, limit: int) -> str:
    from ..state_record import render

    return render(ledger, limit)


def capped_prompt(prompt: str, state: CompactState, out: dict[str, Any]) -> str:
    """Cap the summary reply (``max_tokens``) when the plan gave the summary less than the reserve."""
    cap = state.summary_max_tokens
    out.pop("max_tokens", None)
    if not count(cap) or cap == 0:
        return prompt
    out["max_tokens"] = cap
    return prompt + SUMMARY_CAP_NOTE.format(words=max(50, cap * 2 // 3), tokens=cap)
