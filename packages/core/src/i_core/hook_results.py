"""What each event's hooks must answer, checked in one place: the table ``CHECKS``.

A checker takes a hook's answer and the data that hook was sent, and returns the typed result the
core reads back, or raises ``HookResultError`` whose message completes "worker W ..." (it starts
with the verb: "returned ..."). ``HookRunner.checked`` applies it to each hook's answer, so the
error names the hook that broke the contract. A field the answer leaves out keeps the value that
was sent ("unchanged"); a history the answer leaves untouched (the very object sent, as in the
pass-through of an event nobody handles) is not validated again.

Observers (``after_save``, ``finish``, ``request_retry``, ``after_response``,
``after_compact_commit``) answer nothing the core reads: their checker returns None.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from i_protocol import BudgetVerdict, ProtocolError
from i_protocol.history import HistoryError, validate_history

from .errors import HookResultError, ModelError

DECISIONS = ("allow", "ask", "deny")
"""The answers of ``tool_approval``; anything else denies."""
MAX_CHUNKS = 64
"""A ``before_compact`` that splits a prefix into more summary requests than this is refused."""

Checker = Callable[[dict[str, Any], dict[str, Any]], Any]

EXTENSION_FIELDS: Mapping[str, tuple[tuple[tuple[str, ...], str], ...]] = {
    "context_budget": (
        (("budget_result", "cut_estimates"), "cut_estimates"),
        (("budget_result", "tool_output_budget"), "tool_output_budget"),
    ),
    "before_compact": ((("chunks",), "chunks"),),
    "after_compact": ((("request",), "after_compact_rounds"),),
}
"""The optional answer fields beyond SPEC §3.5 and the seeds, each with the extension
(``i_protocol.handshake.EXTENSIONS``) that carries it. The core reads one only from a worker that
declared that extension in ``hello`` (``undeclared`` takes it off every other answer); without it
the event's SPEC contract applies: one summary request, a final summary, the latest cut."""


def undeclared(
    event: str, answer: dict[str, Any], declared: Callable[[str], bool]
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """``answer`` without the extension fields (``EXTENSION_FIELDS``) whose extension its worker did
    not declare, and the (field, extension) pairs taken off. ``answer`` itself is never changed."""
    dropped: list[tuple[str, str]] = []
    for path, extension in EXTENSION_FIELDS.get(event, ()):
        *parents, name = path
        holder: Any = answer
        for key in parents:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or name not in holder or declared(extension):
            continue
        answer = _without(answer, path)
        dropped.append((".".join(path), extension))
    return answer, dropped


def _without(value: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    head, *rest = path
    if not rest:
        return {key: item for key, item in value.items() if key != head}
    return {**value, head: _without(value[head], tuple(rest))}


# -- the typed results ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BudgetCheck:
    """One ``context_budget`` answer: the full output (what ``compact_plan`` receives) and its verdict."""

    output: dict[str, Any]
    verdict: BudgetVerdict


@dataclass(frozen=True, slots=True)
class CompactPlan:
    """``compact_plan``: where to cut (None: the compactor declines, ``reason`` says why)."""

    cut: int | None
    state: dict[str, Any]
    reason: str


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One model summary request a compactor prepared: its system prompt and the messages."""

    prompt: str
    messages: list[Any]


@dataclass(frozen=True, slots=True)
class PreparedSummary:
    """``before_compact``: a local ``summary``, or the ``requests`` to send for one (in order)."""

    state: dict[str, Any]
    summary: str | None
    requests: tuple[SummaryRequest, ...]
    max_tokens: int | None
    """A cap on each summary reply (the caller keeps it at most the configured max_tokens)."""
    summary_images: list[Any]
    retained_images: list[dict[str, Any]]
    """Checked image parts (only their URL kept) that stay in the summary message."""


@dataclass(frozen=True, slots=True)
class Revision:
    """``after_compact``: the final ``summary``, or one more ``request`` to send first."""

    state: dict[str, Any]
    summary: str | None
    request: SummaryRequest | None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The ``tool`` event's or ``after_tool``'s answer: text, and images checked later per batch."""

    output: str
    images: list[Any] = field(default_factory=list)
    is_error: bool = False
    """The worker reports a failure as a result (``"is_error": true``) and stays up."""


@dataclass(frozen=True, slots=True)
class RequestChange:
    """``before_request``: the request to send (same origin) and the meta that travels with it."""

    url: str
    body: dict[str, Any]
    meta: dict[str, Any]


@dataclass(frozen=True, slots=True)
class TurnAdditions:
    """``before_turn``: the context snapshots reported and the queued user input to append."""

    context: dict[str, dict[str, Any]]
    append: list[dict[str, Any]]


# -- helpers ---------------------------------------------------------------------------------------


def _history(answer: dict[str, Any], sent: dict[str, Any], key: str, check: str | None = None) -> list[Any]:
    messages = answer.get(key, sent.get(key))
    if messages is sent.get(key):
        return cast("list[Any]", messages)  # the core's own history, valid already
    try:
        validate_history(messages)
    except HistoryError as exc:
        raise HookResultError(f"returned an invalid history: {exc}", check=check) from exc
    return cast("list[Any]", messages)


def _state(answer: dict[str, Any], sent: dict[str, Any]) -> dict[str, Any]:
    state = answer.get("state")
    if isinstance(state, dict):
        return state
    before = sent.get("state")
    return before if isinstance(before, dict) else {}


def _summary_request(value: object, where: str) -> SummaryRequest:
    prompt = value.get("prompt") if isinstance(value, dict) else None
    messages = value.get("messages") if isinstance(value, dict) else None
    if not isinstance(prompt, str) or not prompt.strip() or not isinstance(messages, list):
        raise HookResultError(
            f"returned {where}neither a local summary nor a prompt with messages", check="summary_reply_invalid"
        )
    return SummaryRequest(prompt, messages)


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


# -- one checker per event -------------------------------------------------------------------------


def _ignored(answer: dict[str, Any], sent: dict[str, Any]) -> None:
    return None


def _session_load(answer: dict[str, Any], sent: dict[str, Any]) -> list[Any]:
    return _history(answer, sent, "messages")


def _before_save(answer: dict[str, Any], sent: dict[str, Any]) -> list[Any]:
    return _history(answer, sent, "messages")


def _system_prompt(answer: dict[str, Any], sent: dict[str, Any]) -> str:
    prompt = answer.get("prompt")
    if not _text(prompt):
        raise HookResultError("returned no non-empty prompt")
    return prompt  # type: ignore[return-value]


def _user_input(answer: dict[str, Any], sent: dict[str, Any]) -> str | list[Any]:
    content = answer.get("content", sent.get("content"))
    if not isinstance(content, str | list):
        raise HookResultError("returned content that is neither text nor a list of parts")
    return content


def _before_turn(answer: dict[str, Any], sent: dict[str, Any]) -> TurnAdditions:
    context = answer.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise HookResultError("returned a context that is not an object")
    for source, state in context.items():
        if not isinstance(state, dict) or not isinstance(state.get("entries"), dict):
            raise HookResultError(f"returned context.{source} that is not an object with an entries object")
    append = answer.get("append")
    if append is None:
        append = []
    if not isinstance(append, list):
        raise HookResultError("returned append that is not a list of user messages")
    messages = []
    for item in append:
        if not (
            isinstance(item, dict)
            and item.get("role") == "user"
            and _text(item.get("content"))
            and isinstance(item.get("_steering"), str)
        ):
            raise HookResultError("returned an append entry that is not a user message with text and a _steering id")
        # Rebuilt: a hook may add the user's words at a request boundary, never any other field.
        messages.append({"role": "user", "content": item["content"], "_steering": item["_steering"]})
    return TurnAdditions(context, messages)


def _before_tool(answer: dict[str, Any], sent: dict[str, Any]) -> tuple[str, str]:
    name, arguments = answer.get("name", sent.get("name")), answer.get("arguments", sent.get("arguments"))
    if not isinstance(name, str) or not isinstance(arguments, str):
        raise HookResultError("returned a name or arguments that are not strings")
    return name, arguments


class Decision(str):
    """A ``tool_approval`` decision (allow/ask/deny) and the ``sandbox`` its answer set for the call
    (extension ``sandbox``: ``{"mode": "workspace-write" | "read-only", "network": bool}``), else None."""

    sandbox: dict[str, Any] | None = None


SANDBOX_MODES = ("workspace-write", "read-only")


def _tool_approval(answer: dict[str, Any], sent: dict[str, Any]) -> Decision:
    decision = answer.get("decision")
    if decision not in DECISIONS:
        raise HookResultError(f"answered decision {decision!r}, which is not allow/ask/deny")
    result = Decision(decision)
    sandbox = answer.get("sandbox")
    if sandbox is not None:
        # Never read loosely: a sandbox the core cannot apply as asked must not become no sandbox.
        if (
            not isinstance(sandbox, dict)
            or sandbox.get("mode") not in SANDBOX_MODES
            or not isinstance(sandbox.get("network", False), bool)
        ):
            raise HookResultError(
                f"answered sandbox {sandbox!r}, not {{mode: workspace-write | read-only, network: true | false}}"
            )
        result.sandbox = {"mode": sandbox["mode"], "network": sandbox.get("network", False)}
    return result


def _tool(answer: dict[str, Any], sent: dict[str, Any]) -> ToolResult:
    output = answer.get("output")
    if not isinstance(output, str):
        raise HookResultError("returned no text output")
    images = answer.get("images")
    is_error = answer.get("is_error", False)
    if not isinstance(is_error, bool):
        raise HookResultError(f"returned is_error {is_error!r}, not true or false")
    return ToolResult(output, [] if images is None else images, is_error)


def _tools_list(answer: dict[str, Any], sent: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The announced tools' schemas (name, description, parameters only), each checked like a manifest tool's."""
    from .manifest import TOOL_NAME
    from .tools import BUILTIN_NAMES

    tools = answer.get("tools", [])
    if not isinstance(tools, list):
        raise HookResultError("returned tools that are not a list of tool schemas")
    schemas: dict[str, dict[str, Any]] = {}
    for index, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            raise HookResultError(
                f"announced tools[{index}] with name {name!r}, not 1-64 characters of A-Z a-z 0-9 _ -"
            )
        if name in BUILTIN_NAMES:
            raise HookResultError(f"announced tool {name!r}, which would shadow the built-in tool of that name")
        if name in schemas:
            raise HookResultError(f"announced tool {name!r} twice")
        description = tool.get("description", "")
        parameters = tool.get("parameters")
        if not isinstance(description, str):
            raise HookResultError(f"announced tool {name!r} with a description that is not a string")
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            raise HookResultError(
                f'announced tool {name!r} whose parameters are not a JSON schema with "type": "object"'
            )
        schemas[name] = {"name": name, "description": description, "parameters": parameters}
    return tuple(schemas.values())


def _after_tool(answer: dict[str, Any], sent: dict[str, Any]) -> ToolResult:
    output = answer.get("output", sent.get("output"))
    if not isinstance(output, str):
        raise HookResultError("returned no text output")
    return ToolResult(output, answer.get("images", sent.get("images")) or [])


def _undo(answer: dict[str, Any], sent: dict[str, Any]) -> Any:
    from i_protocol.checkpoint import undo_answer, undo_request

    try:
        return undo_answer(answer, undo_request(sent))
    except ProtocolError as exc:
        raise HookResultError(str(exc)) from exc


def _context_budget(answer: dict[str, Any], sent: dict[str, Any]) -> BudgetCheck:
    try:
        verdict = BudgetVerdict.parse(answer)
    except ProtocolError as exc:
        raise HookResultError(f"answered without a verdict: {exc}") from exc
    # A budget provider can never pre-select a cut for the compactor.
    return BudgetCheck({**answer, "cut": None}, verdict)


def _compact_plan(answer: dict[str, Any], sent: dict[str, Any]) -> CompactPlan:
    cut = answer.get("cut")
    state = _state(answer, sent)
    if cut is None:
        reason = str(answer.get("reason") or "compactor declined")
        detail = answer.get("detail")
        return CompactPlan(None, state, f"{reason}: {detail}" if isinstance(detail, str) and detail else reason)
    history = sent.get("history")
    length = len(history) if isinstance(history, list) else 0
    if isinstance(cut, bool) or not isinstance(cut, int) or not 2 <= cut < length:
        raise HookResultError(f"returned an invalid cut {cut!r} (need 2 <= cut < {length})", check="invalid_cut")
    role = history[cut].get("role") if isinstance(history[cut], dict) else None  # type: ignore[index]
    if role not in ("user", "assistant"):
        raise HookResultError(
            f"returned cut {cut}, a {role!r} message inside a tool batch; it must be a user or assistant message",
            check="invalid_cut",
        )
    return CompactPlan(cut, state, "")


def _before_compact(answer: dict[str, Any], sent: dict[str, Any]) -> PreparedSummary:
    from .tools import tool_images

    retained: list[dict[str, Any]] = []
    if answer.get("retained_images"):
        try:
            retained = tool_images(answer["retained_images"])
        except Exception as exc:  # ToolError: what is wrong with which image
            raise HookResultError(f"returned invalid retained_images: {exc}", check="invalid_candidate") from exc
    images = answer.get("summary_images") or []
    if not isinstance(images, list):
        raise HookResultError("returned summary_images that are not a list", check="summary_reply_invalid")
    cap = answer.get("max_tokens")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 1):
        raise HookResultError(f"returned max_tokens {cap!r}, not a positive integer", check="summary_reply_invalid")
    state = _state(answer, sent)
    if "summary" in answer:
        if not _text(answer["summary"]):
            raise HookResultError("returned an empty or non-text local summary", check="summary_reply_invalid")
        return PreparedSummary(state, answer["summary"], (), cap, images, retained)
    chunks = answer.get("chunks")
    if chunks is None:
        requests: tuple[SummaryRequest, ...] = (_summary_request(answer, ""),)
    elif not isinstance(chunks, list) or not chunks or len(chunks) > MAX_CHUNKS:
        raise HookResultError(
            f"returned chunks that are not a list of 1 to {MAX_CHUNKS} prepared requests", check="summary_reply_invalid"
        )
    else:
        requests = tuple(_summary_request(chunk, f"in chunks[{i}] ") for i, chunk in enumerate(chunks))
    return PreparedSummary(state, None, requests, cap, images, retained)


def _after_compact(answer: dict[str, Any], sent: dict[str, Any]) -> Revision:
    state = _state(answer, sent)
    request = answer.get("request")
    if request is not None:
        return Revision(state, None, _summary_request(request, "a request with "))
    summary = answer.get("summary")
    if not _text(summary):
        raise HookResultError("returned an empty or non-text summary", check="summary_reply_invalid")
    return Revision(state, summary, None)


def _before_compact_commit(answer: dict[str, Any], sent: dict[str, Any]) -> list[Any]:
    return _history(answer, sent, "messages", check="invalid_candidate")


def _before_request(answer: dict[str, Any], sent: dict[str, Any]) -> RequestChange:
    from .config import origin_of

    url, body, meta = answer.get("url", sent.get("url")), answer.get("body"), answer.get("request_meta", {})
    if not isinstance(url, str) or origin_of(url) != origin_of(sent["url"]):
        # Not a broken contract but a refused request: hooks may change the body, never the origin.
        raise ModelError(f"a before_request hook tried to change the request origin to {url!r}; refused")
    if not isinstance(body, dict):
        raise HookResultError("returned no body object")
    if not isinstance(meta, dict):
        raise HookResultError("returned a request_meta that is not an object")
    return RequestChange(url, body, meta)


CHECKS: Mapping[str, Checker] = {
    "session_load": _session_load,
    "system_prompt": _system_prompt,
    "user_input": _user_input,
    "before_turn": _before_turn,
    "context_budget": _context_budget,
    "compact_plan": _compact_plan,
    "before_compact": _before_compact,
    "after_compact": _after_compact,
    "before_compact_commit": _before_compact_commit,
    "after_compact_commit": _ignored,
    "before_request": _before_request,
    "request_retry": _ignored,
    "after_response": _ignored,
    "before_tool": _before_tool,
    "tool_approval": _tool_approval,
    "tool": _tool,
    "after_tool": _after_tool,
    "before_save": _before_save,
    "after_save": _ignored,
    "finish": _ignored,
    "tools_list": _tools_list,
    "undo": _undo,
}
"""Every lifecycle event (``events.EVENTS``) and the ``tool`` call, with its checker."""
