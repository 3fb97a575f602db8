"""Every event a host sends a worker (SPEC §3.4), and the typed data of each: one owner for both sides.

The names first: ``LIFECYCLE_EVENTS`` are what a manifest may subscribe to; ``EVENTS`` adds the
protocol-level requests (``hello``, ``tool``, ``provider_request``). ``Worker.hook``
refuses any other name unless it is registered as an extension (``Worker.hook(name,
extension=True)``), so a misspelled event fails at registration instead of never being called.

Then, per event, a request type (``REQUESTS``: the data the host sends, a ``TypedDict`` whose
optional fields are ``NotRequired``) and an answer type (``ANSWERS``: the fields the host reads
back). ``parse_request`` checks data against its request type; ``parse_answer`` turns a worker's
answer into the typed result the host reads (``ToolResult``, ``CompactPlan``, …), raising
``EventError`` (a ``ProtocolError``) that names the event and the field. ``to_json`` is the
producer's side: a worker builds its answer, ``to_json`` checks it with the same parser the host
uses and returns the plain JSON object to send.

A field the answer leaves out keeps the value that was sent ("unchanged"). The host-only rules
(a request's origin, tool names that would shadow its own, image parts it can read) stay with
the host.
"""

import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import (
    TYPE_CHECKING,
    Any,
    Literal,
    NotRequired,
    TypedDict,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
)

from ._event_names import ANY_EVENT, DECISIONS, EVENTS, LIFECYCLE_EVENTS, PROTOCOL_EVENTS, is_event
from .errors import ProtocolError
from .history import Message

if TYPE_CHECKING:
    from .budget import BudgetVerdict
    from .handshake import Hello

MAX_CHUNKS = 64
"""A ``before_compact`` that splits a prefix into more summary requests than this is refused."""


class EventError(ProtocolError):
    """An event's data or answer does not have the shape the event requires.

    ``str()`` names the event and the field; ``detail`` is the host's sentence completing
    "worker W …" (it starts with the verb: "returned …"); ``check`` names the compaction rule
    (``invalid_cut``, ``summary_reply_invalid``, ``invalid_candidate``) when there is one.
    """

    def __init__(self, event: str, field: str, detail: str, *, check: str | None = None, part: str = "answer") -> None:
        super().__init__(f"{event} {part}, field {field}: {detail}")
        self.event = event
        self.field = field
        self.detail = detail
        self.check = check


# -- the data each event carries (what the host sends) ---------------------------------------------

Json = dict[str, Any]


class SessionLoadRequest(TypedDict):
    messages: list[Message]
    path: str


class SystemPromptRequest(TypedDict):
    prompt: str
    workspace: NotRequired[str | None]
    instructions: NotRequired[str]


class UserInputRequest(TypedDict):
    content: str | list[object]


class BeforeTurnRequest(TypedDict):
    messages: list[Message]
    workspace: NotRequired[str | None]


class Rejection(TypedDict, total=False):
    input_tokens: int
    limit: int


class ContextBudgetRequest(TypedDict):
    model: str
    protocol: str
    origin: NotRequired[str]
    budget: Json
    max_tokens: int | None
    history: list[Message]
    tools: list[object]
    pending_tool_calls: NotRequired[list[object]]
    compact: NotRequired[bool]
    usage: NotRequired[Json | None]
    cut: None
    force: NotRequired[bool]
    rejection: NotRequired[Rejection]


class PreviousAttempt(TypedDict):
    cut: int | None
    reason: str


class PreparedOffer(TypedDict):
    cut: int
    summary_ref: str


class PreparedGiven(TypedDict):
    cut: int
    summary_ref: str
    summary: str
    state: Json


class CompactPlanRequest(TypedDict):
    history: list[Message]
    cut: None
    budget_result: NotRequired[Json]
    force: NotRequired[bool]
    previous_attempt: NotRequired[PreviousAttempt]
    state: NotRequired[Json]
    focus: NotRequired[str]
    prepared: NotRequired[PreparedOffer]


class SummaryRequestOverhead(TypedDict):
    bytes: int
    tokens: int


class BeforeCompactRequest(TypedDict):
    messages: list[Message]
    cut: int
    state: Json
    model: str
    budget: Json
    workspace: NotRequired[str | None]
    summary_request_overhead: NotRequired[SummaryRequestOverhead]
    focus: NotRequired[str]
    prepared: NotRequired[PreparedGiven]


class AfterCompactRequest(TypedDict):
    summary: str
    state: Json
    round: NotRequired[int]


class BeforeCompactCommitRequest(TypedDict):
    messages: list[Message]
    cut: int


class AfterCompactCommitRequest(TypedDict):
    committed: bool
    reason: str
    check: NotRequired[str | None]
    cut: int | None
    comparable_before: int | None
    comparable_after: int | None
    state: NotRequired[Json]


class BeforeRequestRequest(TypedDict):
    url: str
    body: Json
    protocol: str
    model: str
    budget: NotRequired[Json]
    request_meta: Json


class ProviderRequestRequest(TypedDict):
    url: str
    body: Json
    protocol: str
    model: str
    timeout: NotRequired[float]
    request_meta: Json


class RequestRetryRequest(TypedDict):
    request_meta: Json
    attempt: int
    reason: str
    protocol: str


class AfterResponseRequest(TypedDict):
    response: Json
    request_meta: Json
    protocol: str
    model: str


class BeforeToolRequest(TypedDict):
    name: str
    arguments: str
    id: str
    session: NotRequired[str]
    turn: NotRequired[int]


class ToolApprovalRequest(TypedDict):
    name: str
    arguments: Json
    external: bool
    decision: str
    plan: NotRequired[bool]


class AfterToolRequest(TypedDict):
    name: str
    id: str
    output: str
    images: list[object]
    is_error: bool
    session: NotRequired[str]
    turn: NotRequired[int]


class UndoRequestJson(TypedDict):
    session: str
    turn: int
    dry_run: bool


class SaveRequest(TypedDict):
    messages: list[Message]
    path: str


class FinishRequest(TypedDict):
    messages: list[Message]


class Problem(TypedDict):
    server: str
    reason: str
    message: NotRequired[str]
    stderr_tail: NotRequired[str]


class ToolsListRequest(TypedDict):
    tools: list[object]
    problems: NotRequired[list[Problem]]


class ToolRequest(TypedDict):
    name: str
    arguments: Json


class HelloRequest(TypedDict):
    package: str
    version: str
    protocol: str
    extensions: list[str]


REQUESTS: Mapping[str, type] = {
    "session_load": SessionLoadRequest,
    "system_prompt": SystemPromptRequest,
    "user_input": UserInputRequest,
    "before_turn": BeforeTurnRequest,
    "context_budget": ContextBudgetRequest,
    "compact_plan": CompactPlanRequest,
    "before_compact": BeforeCompactRequest,
    "after_compact": AfterCompactRequest,
    "before_compact_commit": BeforeCompactCommitRequest,
    "after_compact_commit": AfterCompactCommitRequest,
    "before_request": BeforeRequestRequest,
    "request_retry": RequestRetryRequest,
    "after_response": AfterResponseRequest,
    "before_tool": BeforeToolRequest,
    "tool_approval": ToolApprovalRequest,
    "after_tool": AfterToolRequest,
    "before_save": SaveRequest,
    "after_save": SaveRequest,
    "finish": FinishRequest,
    "tools_list": ToolsListRequest,
    "undo": UndoRequestJson,
    "hello": HelloRequest,
    "tool": ToolRequest,
    "provider_request": ProviderRequestRequest,
}
"""Each event's request data type."""


# -- the fields the host reads back (an answer is the complete data, these are what counts) -------


class MessagesAnswer(TypedDict, total=False):
    messages: list[Message]


class SystemPromptAnswer(TypedDict):
    prompt: str


class UserInputAnswer(TypedDict, total=False):
    content: str | list[object]


class BeforeTurnAnswer(TypedDict, total=False):
    context: dict[str, Json]
    append: list[Json]


class ContextBudgetAnswer(TypedDict):
    budget_result: Json


class CompactPlanAnswer(TypedDict, total=False):
    cut: int | None
    state: Json
    reason: str
    detail: str


class SummaryRequestJson(TypedDict):
    prompt: str
    messages: list[Message]


class BeforeCompactAnswer(TypedDict, total=False):
    summary: str
    prompt: str
    messages: list[Message]
    chunks: list[SummaryRequestJson]
    summary_images: list[object]
    retained_images: list[object]
    max_tokens: int
    state: Json
    focus_used: bool
    extends: str


class AfterCompactAnswer(TypedDict, total=False):
    summary: str
    request: SummaryRequestJson
    state: Json


class BeforeRequestAnswer(TypedDict, total=False):
    url: str
    body: Json
    request_meta: Json


class BeforeToolAnswer(TypedDict, total=False):
    name: str
    arguments: str
    notice: str


class Sandbox(TypedDict):
    mode: str
    network: NotRequired[bool]


class ToolApprovalAnswer(TypedDict):
    decision: str
    sandbox: NotRequired[Sandbox]


class UndoAnswerJson(TypedDict):
    session: str
    turn: int
    dry_run: bool
    turns: NotRequired[list[int]]
    files: list[Json]
    not_undoable: NotRequired[list[str]]
    applied: NotRequired[bool]


class ToolAnswer(TypedDict):
    output: str
    images: NotRequired[list[object]]
    is_error: NotRequired[bool]


class AfterToolAnswer(TypedDict, total=False):
    output: str
    images: list[object]


class ToolSchema(TypedDict):
    name: str
    description: NotRequired[str]
    parameters: Json


class ToolsListAnswer(TypedDict, total=False):
    tools: list[ToolSchema]
    problems: list[Problem]


class Nothing(TypedDict):
    """An observer's answer: the host reads nothing back."""


class HelloAnswer(TypedDict):
    package: str
    version: str
    protocol: str
    library: str
    extensions: list[str]


ANSWERS: Mapping[str, type] = {
    "session_load": MessagesAnswer,
    "system_prompt": SystemPromptAnswer,
    "user_input": UserInputAnswer,
    "before_turn": BeforeTurnAnswer,
    "context_budget": ContextBudgetAnswer,
    "compact_plan": CompactPlanAnswer,
    "before_compact": BeforeCompactAnswer,
    "after_compact": AfterCompactAnswer,
    "before_compact_commit": MessagesAnswer,
    "after_compact_commit": Nothing,
    "before_request": BeforeRequestAnswer,
    "request_retry": Nothing,
    "after_response": Nothing,
    "before_tool": BeforeToolAnswer,
    "tool_approval": ToolApprovalAnswer,
    "after_tool": AfterToolAnswer,
    "before_save": MessagesAnswer,
    "after_save": Nothing,
    "finish": Nothing,
    "tools_list": ToolsListAnswer,
    "undo": UndoAnswerJson,
    "hello": HelloAnswer,
    "tool": ToolAnswer,
    "provider_request": Nothing,
}
"""Each event's answer type: the fields the host reads back (``Nothing`` for an observer).
``provider_request``'s reply is read by the host's provider client, ``hello``'s by ``handshake``."""


# -- the typed results the host reads -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CompactPlan:
    """``compact_plan``: where to cut (None: the compactor declines, ``reason`` says why)."""

    cut: int | None
    state: Json
    reason: str

    def to_json(self) -> Json:
        """The answer fields."""
        return {"cut": self.cut, "state": self.state, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SummaryRequest:
    """One model summary request a compactor prepared: its system prompt and the messages."""

    prompt: str
    messages: list[Any]

    def to_json(self) -> SummaryRequestJson:
        """The ``{prompt, messages}`` object."""
        return {"prompt": self.prompt, "messages": self.messages}


@dataclass(frozen=True, slots=True)
class PreparedSummary:
    """``before_compact``: a local ``summary``, or the ``requests`` to send for one (in order)."""

    state: Json
    summary: str | None
    requests: tuple[SummaryRequest, ...]
    max_tokens: int | None
    """A cap on each summary reply (the caller keeps it at most the configured max_tokens)."""
    summary_images: list[Any]
    retained_images: list[Any]
    """Image parts that stay in the summary message (the host checks them)."""
    focus_used: bool = False
    """The compactor used the request's ``focus`` (extension ``focus``); absent: it did not say so."""
    extends: str | None = None
    """The ``summary_ref`` of the prepared summary the ``requests`` extend (extension ``prepared``):
    they cover only the messages after its cut, and the first goes with it as the summary so far."""


@dataclass(frozen=True, slots=True)
class Revision:
    """``after_compact``: the final ``summary``, or one more ``request`` to send first."""

    state: Json
    summary: str | None
    request: SummaryRequest | None


@dataclass(frozen=True, slots=True)
class ToolResult:
    """The ``tool`` event's or ``after_tool``'s answer: text, and images checked later per batch."""

    output: str
    images: list[Any] = field(default_factory=list)
    is_error: bool = False
    """The worker reports a failure as a result (``"is_error": true``) and stays up."""

    def to_json(self) -> ToolAnswer:
        """The answer fields (``images`` and ``is_error`` only when set)."""
        answer: ToolAnswer = {"output": self.output}
        if self.images:
            answer["images"] = self.images
        if self.is_error:
            answer["is_error"] = True
        return answer


@dataclass(frozen=True, slots=True)
class RequestChange:
    """``before_request``: the request to send and the meta that travels with it (the host checks the origin)."""

    url: str
    body: Json
    meta: Json


@dataclass(frozen=True, slots=True)
class TurnAdditions:
    """``before_turn``: the context snapshots reported and the queued user input to append."""

    context: dict[str, Json]
    append: list[Json]


# -- parsing ---------------------------------------------------------------------------------------


def _text(value: object) -> bool:
    return isinstance(value, str) and bool(value.strip())


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def _history(event: str, answer: Json, sent: Json, key: str, check: str | None = None) -> list[Message]:
    from .history import HistoryError, validate_history

    messages = answer.get(key, sent.get(key))
    if messages is sent.get(key):
        return cast("list[Message]", messages)  # the host's own history, valid already
    try:
        validate_history(messages)
    except HistoryError as exc:
        raise EventError(event, key, f"returned an invalid history: {exc}", check=check) from exc
    return cast("list[Message]", messages)


def _state(answer: Json, sent: Json) -> Json:
    state = answer.get("state")
    if isinstance(state, dict):
        return state
    before = sent.get("state")
    return before if isinstance(before, dict) else {}


def _summary_request(event: str, value: object, where: str, field_name: str) -> SummaryRequest:
    prompt = value.get("prompt") if isinstance(value, dict) else None
    messages = value.get("messages") if isinstance(value, dict) else None
    if not isinstance(prompt, str) or not prompt.strip() or not isinstance(messages, list):
        detail = f"returned {where}neither a local summary nor a prompt with messages"
        raise EventError(event, field_name, detail, check="summary_reply_invalid")
    return SummaryRequest(prompt, messages)


def _observed(answer: Json, sent: Json) -> None:
    return None


def _session_load(answer: Json, sent: Json) -> list[Message]:
    return _history("session_load", answer, sent, "messages")


def _before_save(answer: Json, sent: Json) -> list[Message]:
    return _history("before_save", answer, sent, "messages")


def _before_compact_commit(answer: Json, sent: Json) -> list[Message]:
    return _history("before_compact_commit", answer, sent, "messages", check="invalid_candidate")


def _system_prompt(answer: Json, sent: Json) -> str:
    prompt = answer.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise EventError("system_prompt", "prompt", "returned no non-empty prompt")
    return prompt


def _user_input(answer: Json, sent: Json) -> str | list[object]:
    content = answer.get("content", sent.get("content"))
    if not isinstance(content, str | list):
        raise EventError("user_input", "content", "returned content that is neither text nor a list of parts")
    return content


def _before_turn(answer: Json, sent: Json) -> TurnAdditions:
    event = "before_turn"
    context = answer.get("context")
    if context is None:
        context = {}
    if not isinstance(context, dict):
        raise EventError(event, "context", "returned a context that is not an object")
    for source, state in context.items():
        if not isinstance(state, dict) or not isinstance(state.get("entries"), dict):
            detail = f"returned context.{source} that is not an object with an entries object"
            raise EventError(event, f"context.{source}", detail)
    append = answer.get("append")
    if append is None:
        append = []
    if not isinstance(append, list):
        raise EventError(event, "append", "returned append that is not a list of user messages")
    messages: list[Json] = []
    for index, item in enumerate(append):
        if not (
            isinstance(item, dict)
            and item.get("role") == "user"
            and _text(item.get("content"))
            and isinstance(item.get("_steering"), str)
        ):
            detail = "returned an append entry that is not a user message with text and a _steering id"
            raise EventError(event, f"append[{index}]", detail)
        # Rebuilt: a hook may add the user's words at a request boundary, never any other field.
        messages.append({"role": "user", "content": item["content"], "_steering": item["_steering"]})
    return TurnAdditions(context, messages)


def _before_tool(answer: Json, sent: Json) -> tuple[str, str]:
    name, arguments = answer.get("name", sent.get("name")), answer.get("arguments", sent.get("arguments"))
    if not isinstance(name, str) or not isinstance(arguments, str):
        field_name = "name" if not isinstance(name, str) else "arguments"
        raise EventError("before_tool", field_name, "returned a name or arguments that are not strings")
    return name, arguments


def _tool_approval(answer: Json, sent: Json) -> str:
    decision = answer.get("decision")
    if decision not in DECISIONS:
        raise EventError("tool_approval", "decision", f"answered decision {decision!r}, which is not allow/ask/deny")
    return decision  # type: ignore[no-any-return]


def _tool(answer: Json, sent: Json) -> ToolResult:
    output = answer.get("output")
    if not isinstance(output, str):
        raise EventError("tool", "output", "returned no text output")
    images = answer.get("images")
    is_error = answer.get("is_error", False)
    if not isinstance(is_error, bool):
        raise EventError("tool", "is_error", f"returned is_error {is_error!r}, not true or false")
    return ToolResult(output, [] if images is None else images, is_error)


def _after_tool(answer: Json, sent: Json) -> ToolResult:
    output = answer.get("output", sent.get("output"))
    if not isinstance(output, str):
        raise EventError("after_tool", "output", "returned no text output")
    return ToolResult(output, answer.get("images", sent.get("images")) or [])


def _tools_list(answer: Json, sent: Json) -> tuple[ToolSchema, ...]:
    """The announced tools' schemas (name, description, parameters only); the host checks the names."""
    event = "tools_list"
    tools = answer.get("tools", [])
    if not isinstance(tools, list):
        raise EventError(event, "tools", "returned tools that are not a list of tool schemas")
    schemas: list[ToolSchema] = []
    for index, tool in enumerate(tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        if not isinstance(name, str):
            detail = f"announced tools[{index}] with name {name!r}, not 1-64 characters of A-Z a-z 0-9 _ -"
            raise EventError(event, f"tools[{index}].name", detail)
        description = tool.get("description", "")
        parameters = tool.get("parameters")
        if not isinstance(description, str):
            detail = f"announced tool {name!r} with a description that is not a string"
            raise EventError(event, f"tools[{index}].description", detail)
        if not isinstance(parameters, dict) or parameters.get("type") != "object":
            detail = f'announced tool {name!r} whose parameters are not a JSON schema with "type": "object"'
            raise EventError(event, f"tools[{index}].parameters", detail)
        schemas.append({"name": name, "description": description, "parameters": parameters})
    return tuple(schemas)


def _context_budget(answer: Json, sent: Json) -> "BudgetVerdict":
    from .budget import BudgetVerdict

    try:
        return BudgetVerdict.parse(answer)
    except ProtocolError as exc:
        raise EventError("context_budget", "budget_result.fits", f"answered without a verdict: {exc}") from exc


def _compact_plan(answer: Json, sent: Json) -> CompactPlan:
    cut = answer.get("cut")
    state = _state(answer, sent)
    if cut is None:
        reason = str(answer.get("reason") or "compactor declined")
        detail = answer.get("detail")
        return CompactPlan(None, state, f"{reason}: {detail}" if isinstance(detail, str) and detail else reason)
    history = sent.get("history")
    length = len(history) if isinstance(history, list) else 0
    if isinstance(cut, bool) or not isinstance(cut, int) or not 2 <= cut < length:
        detail = f"returned an invalid cut {cut!r} (need 2 <= cut < {length})"
        raise EventError("compact_plan", "cut", detail, check="invalid_cut")
    role = history[cut].get("role") if isinstance(history[cut], dict) else None  # type: ignore[index]
    if role not in ("user", "assistant"):
        detail = f"returned cut {cut}, a {role!r} message inside a tool batch; it must be a user or assistant message"
        raise EventError("compact_plan", "cut", detail, check="invalid_cut")
    return CompactPlan(cut, state, "")


def _before_compact(answer: Json, sent: Json) -> PreparedSummary:
    event, invalid = "before_compact", "summary_reply_invalid"
    retained = answer.get("retained_images") or []
    if not isinstance(retained, list):
        raise EventError(
            event, "retained_images", "returned invalid retained_images: not a list", check="invalid_candidate"
        )
    images = answer.get("summary_images") or []
    if not isinstance(images, list):
        raise EventError(event, "summary_images", "returned summary_images that are not a list", check=invalid)
    cap = answer.get("max_tokens")
    if cap is not None and not _positive_int(cap):
        raise EventError(event, "max_tokens", f"returned max_tokens {cap!r}, not a positive integer", check=invalid)
    state = _state(answer, sent)
    used = answer.get("focus_used", False)
    if not isinstance(used, bool):
        raise EventError(event, "focus_used", f"returned focus_used {used!r}, not true or false", check=invalid)
    if "summary" in answer:
        if not _text(answer["summary"]):
            raise EventError(event, "summary", "returned an empty or non-text local summary", check=invalid)
        return PreparedSummary(state, answer["summary"], (), cap, images, retained, used)
    chunks = answer.get("chunks")
    if chunks is None:
        requests: tuple[SummaryRequest, ...] = (_summary_request(event, answer, "", "prompt"),)
    elif not isinstance(chunks, list) or not chunks or len(chunks) > MAX_CHUNKS:
        detail = f"returned chunks that are not a list of 1 to {MAX_CHUNKS} prepared requests"
        raise EventError(event, "chunks", detail, check=invalid)
    else:
        requests = tuple(
            _summary_request(event, chunk, f"in chunks[{i}] ", f"chunks[{i}]") for i, chunk in enumerate(chunks)
        )
    extends = answer.get("extends")
    if extends is not None and not isinstance(extends, str):
        raise EventError(event, "extends", f"returned extends {extends!r}, not a summary_ref string", check=invalid)
    return PreparedSummary(state, None, requests, cap, images, retained, used, extends)


def _after_compact(answer: Json, sent: Json) -> Revision:
    state = _state(answer, sent)
    request = answer.get("request")
    if request is not None:
        return Revision(state, None, _summary_request("after_compact", request, "a request with ", "request"))
    summary = answer.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise EventError(
            "after_compact", "summary", "returned an empty or non-text summary", check="summary_reply_invalid"
        )
    return Revision(state, summary, None)


def _before_request(answer: Json, sent: Json) -> RequestChange:
    url, body, meta = answer.get("url", sent.get("url")), answer.get("body"), answer.get("request_meta", {})
    if not isinstance(url, str):
        raise EventError("before_request", "url", "returned a url that is not a string")
    if not isinstance(body, dict):
        raise EventError("before_request", "body", "returned no body object")
    if not isinstance(meta, dict):
        raise EventError("before_request", "request_meta", "returned a request_meta that is not an object")
    return RequestChange(url, body, meta)


def _hello(answer: Json, sent: Json) -> "Hello":
    from .handshake import parse_hello

    return parse_hello(answer, sent)


def _undo(answer: Json, sent: Json) -> Any:
    from .checkpoint import undo_answer, undo_request

    try:
        return undo_answer(answer, undo_request(sent))
    except EventError:
        raise
    except ProtocolError as exc:
        raise EventError("undo", "files", str(exc)) from exc


PARSERS: Mapping[str, Callable[[Json, Json], Any]] = {
    "session_load": _session_load,
    "system_prompt": _system_prompt,
    "user_input": _user_input,
    "before_turn": _before_turn,
    "context_budget": _context_budget,
    "compact_plan": _compact_plan,
    "before_compact": _before_compact,
    "after_compact": _after_compact,
    "before_compact_commit": _before_compact_commit,
    "after_compact_commit": _observed,
    "before_request": _before_request,
    "request_retry": _observed,
    "after_response": _observed,
    "before_tool": _before_tool,
    "tool_approval": _tool_approval,
    "tool": _tool,
    "after_tool": _after_tool,
    "before_save": _before_save,
    "after_save": _observed,
    "finish": _observed,
    "tools_list": _tools_list,
    "undo": _undo,
    "hello": _hello,
    "provider_request": _observed,
}
"""Each event's answer parser: ``(answer, sent) -> typed result`` (None for an observer)."""


def parse_answer(event: str, answer: Json, sent: Json | None = None) -> Any:
    """The typed result the host reads from a worker's ``answer`` to ``sent``; ``EventError`` naming
    the event and the field when the answer breaks the event's contract."""
    parser = PARSERS.get(event)
    if parser is None:
        raise ProtocolError(f"unknown event {event!r}; known events: {', '.join(EVENTS)}")
    return parser(answer, {} if sent is None else sent)


def to_json(event: str, answer: Mapping[str, Any], sent: Json | None = None) -> Json:
    """A producer's answer to ``event`` as the plain JSON object to send, checked first with the
    host's own parser (``EventError`` on a producer bug, never a broken frame on the wire).

    For an answer the producer owns (``budget_result``, a request body, its ``tools``, a prompt).
    A chained event's fields that earlier hooks set (``before_turn``'s ``context``) are theirs:
    the host checks each hook's answer, a producer passes them on untouched."""
    plain = dict(answer)
    parse_answer(event, plain, sent)
    return plain


def parse_request(event: str, data: object) -> Json:
    """``data`` checked against ``event``'s request type (``REQUESTS``): the object itself, or
    ``EventError`` naming the first missing or mistyped field. Fields beyond the type pass."""
    kind = REQUESTS.get(event)
    if kind is None:
        raise ProtocolError(f"unknown event {event!r}; known events: {', '.join(EVENTS)}")
    if not isinstance(data, dict):
        raise EventError(event, "data", f"is {type(data).__name__}, not an object", part="request")
    _check_fields(event, "", kind, data)
    return data


def _check_fields(event: str, prefix: str, kind: type, data: Json) -> None:
    hints = get_type_hints(kind)
    required: frozenset[str] = getattr(kind, "__required_keys__", frozenset())
    for name, hint in hints.items():
        where = f"{prefix}{name}"
        if name not in data:
            if name in required:
                raise EventError(event, where, "missing", part="request")
            continue
        if not _conforms(event, where, data[name], hint):
            raise EventError(event, where, f"is {type(data[name]).__name__}, not {_describe(hint)}", part="request")


def _conforms(event: str, where: str, value: object, hint: object) -> bool:
    origin = get_origin(hint)
    if hint is Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (Union, types.UnionType):
        return any(_conforms(event, where, value, arm) for arm in get_args(hint))
    if origin is Literal:
        return value in get_args(hint)
    if origin is list:
        return isinstance(value, list)
    if origin is dict:
        return isinstance(value, dict)
    if isinstance(hint, type) and hasattr(hint, "__required_keys__"):  # a nested TypedDict
        if not isinstance(value, dict):
            return False
        _check_fields(event, f"{where}.", hint, value)
        return True
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(hint, type) and isinstance(value, hint)


def _describe(hint: object) -> str:
    if get_origin(hint) in (Union, types.UnionType):
        return " or ".join(_describe(arm) for arm in get_args(hint))
    if hint is type(None) or hint is None:
        return "null"
    names: dict[object, str] = {
        str: "a string",
        int: "an integer",
        bool: "true or false",
        float: "a number",
        list: "a list",
    }
    return names.get(get_origin(hint) or hint, "an object")


__all__ = [
    "ANSWERS",
    "ANY_EVENT",
    "DECISIONS",
    "EVENTS",
    "LIFECYCLE_EVENTS",
    "MAX_CHUNKS",
    "PARSERS",
    "PROTOCOL_EVENTS",
    "REQUESTS",
    "CompactPlan",
    "EventError",
    "PreparedSummary",
    "RequestChange",
    "Revision",
    "SummaryRequest",
    "ToolResult",
    "ToolSchema",
    "TurnAdditions",
    "is_event",
    "parse_answer",
    "parse_request",
    "to_json",
]
